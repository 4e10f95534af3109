'use strict';

// A small in-memory event queue with priorities, retries and subscribers.

class EventQueue {
  constructor(options = {}) {
    this.maxRetries = options.maxRetries ?? 3;
    this.items = [];
    this.subscribers = new Map();
    this.processed = 0;
  }

  push(type, payload, priority = 0) {
    const event = { type, payload, priority, attempts: 0, createdAt: Date.now() };
    this.items.push(event);
    this.items.sort((a, b) => b.priority - a.priority || a.createdAt - b.createdAt);
    return event;
  }

  subscribe(type, handler) {
    if (!this.subscribers.has(type)) {
      this.subscribers.set(type, []);
    }
    this.subscribers.get(type).push(handler);
    return () => this.unsubscribe(type, handler);
  }

  unsubscribe(type, handler) {
    const handlers = this.subscribers.get(type) || [];
    const index = handlers.indexOf(handler);
    if (index !== -1) {
      handlers.splice(index, 1);
    }
  }

  async processNext() {
    const event = this.items.shift();
    if (!event) {
      return false;
    }
    const handlers = this.subscribers.get(event.type) || [];
    try {
      for (const handler of handlers) {
        await handler(event.payload);
      }
      this.processed += 1;
    } catch (error) {
      event.attempts += 1;
      if (event.attempts < this.maxRetries) {
        this.items.push(event);
      } else {
        console.error(`dropping ${event.type} after ${event.attempts} attempts: ${error.message}`);
      }
    }
    return true;
  }

  async drain() {
    let count = 0;
    while (await this.processNext()) {
      count += 1;
    }
    return count;
  }

  size() {
    return this.items.length;
  }
}

function groupByType(events) {
  const groups = {};
  for (const event of events) {
    if (!groups[event.type]) {
      groups[event.type] = [];
    }
    groups[event.type].push(event);
  }
  return groups;
}

module.exports = { EventQueue, groupByType };
