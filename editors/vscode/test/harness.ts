/**
 * A bare LSP client on Microsoft's protocol stack (the one vscode-languageclient is built on), for driving the real
 * `infill` server from `node --test` without VS Code.
 */
import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { createProtocolConnection, ProtocolConnection } from 'vscode-languageserver-protocol/node';

export interface Received {
    method: string;
    params: any;
}

export class ServerHarness {
    readonly connection: ProtocolConnection;
    readonly notifications: Received[] = [];
    readonly stderr: string[] = [];
    /** What the client answers to `workspace/configuration` for the `infill` section. */
    settings: Record<string, unknown> = {};
    private readonly child: ChildProcessWithoutNullStreams;
    private readonly waiters: (() => void)[] = [];
    private exited: Promise<number | null>;

    constructor(command: string[], env: NodeJS.ProcessEnv = process.env, cwd?: string) {
        if (command.length === 0) {
            throw new Error('ServerHarness: empty server command');
        }
        this.child = spawn(command[0], command.slice(1), { env, cwd, stdio: 'pipe' });
        this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
        this.child.stderr.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString('utf8')));
        this.connection = createProtocolConnection(
            new StreamMessageReader(this.child.stdout), new StreamMessageWriter(this.child.stdin));
        // Every notification the server sends is recorded (none has a dedicated handler here).
        this.connection.onUnhandledNotification((message) => this.record(message.method, message.params));
        this.connection.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
            params.items.map((item) => (item.section === 'infill' ? this.settings : null)));
        this.connection.onRequest('window/workDoneProgress/create', () => null);
        this.connection.onRequest('client/registerCapability', () => null);
        this.connection.onRequest('client/unregisterCapability', () => null);
        this.connection.onRequest('window/showMessageRequest', (params: unknown) => {
            this.record('window/showMessageRequest', params);
            return null;
        });
        this.connection.onRequest('workspace/applyEdit', () => ({ applied: false }));
        this.connection.listen();
    }

    private record(method: string, params: unknown): void {
        this.notifications.push({ method, params });
        for (const wake of this.waiters.splice(0)) {
            wake();
        }
    }

    received(method: string): any[] {
        return this.notifications.filter((n) => n.method === method).map((n) => n.params);
    }

    /** Resolves with the first notification (from index `from` on) that satisfies `match`; rejects after `ms`. */
    async waitFor(method: string, match: (params: any) => boolean, ms: number, from = 0): Promise<any> {
        const deadline = Date.now() + ms;
        for (;;) {
            const hit = this.notifications.slice(from).find((n) => n.method === method && match(n.params));
            if (hit) {
                return hit.params;
            }
            const left = deadline - Date.now();
            if (left <= 0) {
                const seen = this.notifications.slice(from).map((n) => `${n.method} ${JSON.stringify(n.params)}`);
                throw new Error(`no matching ${method} within ${ms} ms; received:\n${seen.join('\n')}\n` +
                    `server stderr:\n${this.stderr.join('').slice(-4000)}`);
            }
            await new Promise<void>((resolve) => {
                const timer = setTimeout(resolve, left);
                this.waiters.push(() => {
                    clearTimeout(timer);
                    resolve();
                });
            });
        }
    }

    /** Shuts the server down politely, then kills it if it lingers, so no test leaves a process behind. */
    async close(ms = 10000): Promise<number | null> {
        const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
        try {
            if (this.child.exitCode === null) {
                try {
                    await this.connection.sendRequest('shutdown');
                    await this.connection.sendNotification('exit');
                } catch {
                    this.child.kill('SIGTERM');
                }
            }
            return await this.exited;
        } finally {
            clearTimeout(timer);
            this.connection.dispose();
        }
    }
}
