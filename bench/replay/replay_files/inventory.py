"""A small inventory ledger: items, stock movements and a report."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date
from typing import Iterable


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    unit_price: float


@dataclass(frozen=True)
class Movement:
    sku: str
    quantity: int
    day: date
    note: str = ""


@dataclass
class Ledger:
    items: dict[str, Item] = field(default_factory=dict)
    movements: list[Movement] = field(default_factory=list)

    def add_item(self, item: Item) -> None:
        if item.sku in self.items:
            raise ValueError(f"duplicate sku: {item.sku}")
        self.items[item.sku] = item

    def record(self, movement: Movement) -> None:
        if movement.sku not in self.items:
            raise KeyError(f"unknown sku: {movement.sku}")
        if movement.quantity == 0:
            raise ValueError("a movement must change the stock")
        self.movements.append(movement)

    def stock(self, sku: str, until: date | None = None) -> int:
        total = 0
        for movement in self.movements:
            if movement.sku != sku:
                continue
            if until is not None and movement.day > until:
                continue
            total += movement.quantity
        return total

    def value(self, until: date | None = None) -> float:
        return sum(self.stock(sku, until) * item.unit_price for sku, item in self.items.items())

    def low_stock(self, threshold: int) -> list[Item]:
        low = [item for sku, item in self.items.items() if self.stock(sku) < threshold]
        return sorted(low, key=lambda item: item.sku)

    def history(self, sku: str) -> list[tuple[date, int]]:
        running = 0
        out = []
        for movement in sorted(self.movements, key=lambda m: m.day):
            if movement.sku == sku:
                running += movement.quantity
                out.append((movement.day, running))
        return out


def load_items(rows: Iterable[dict[str, str]]) -> list[Item]:
    items = []
    for row in rows:
        price = float(row["unit_price"])
        if price < 0:
            raise ValueError(f"negative price for {row['sku']}")
        items.append(Item(sku=row["sku"].strip(), name=row["name"].strip(), unit_price=price))
    return items


def report(ledger: Ledger) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["sku", "name", "stock", "value"])
    for sku, item in sorted(ledger.items.items()):
        stock = ledger.stock(sku)
        writer.writerow([sku, item.name, stock, f"{stock * item.unit_price:.2f}"])
    return buffer.getvalue()


if __name__ == "__main__":
    ledger = Ledger()
    for item in load_items([{"sku": "A1", "name": "bolt", "unit_price": "0.25"}]):
        ledger.add_item(item)
    ledger.record(Movement("A1", 100, date(2024, 1, 2)))
    ledger.record(Movement("A1", -30, date(2024, 1, 5), "order 17"))
    print(report(ledger))
