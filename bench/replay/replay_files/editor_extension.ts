/**
 * The VS Code side of Infill: starts `infill serve --stdio` through vscode-languageclient (which already turns the
 * server's `textDocument/inlineCompletion` answers into ghost text and runs each item's acceptance `command`), pushes
 * the `infill.*` settings to the server, and shows the server's status in the status bar.
 */
import * as vscode from 'vscode';
import {
    DidChangeConfigurationNotification,
    LanguageClient,
    LanguageClientOptions,
    Middleware,
    ServerOptions,
    State,
} from 'vscode-languageclient/node';

import { matchPartialAcceptance, OfferedItem } from './partial';
import { missingServerMessage, resolveCommand } from './serverCommand';
import { didChangeConfigurationParams, toServerSettings } from './settings';
import { NOT_RUNNING, parseStatus, ServerStatus, statusView } from './status';

const SECTION = 'infill';
const STATUS_NOTIFICATION = 'infill/didChangeStatus';
const DID_SHOW = 'textDocument/didShowCompletion';
const DID_PARTIALLY_ACCEPT = 'textDocument/didPartiallyAcceptCompletion';

class InfillExtension implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private readonly output: vscode.LogOutputChannel;
    private readonly statusItem: vscode.StatusBarItem;
    private readonly disposables: vscode.Disposable[] = [];
    /** Listeners tied to the current client, dropped with it on stop/restart. */
    private clientDisposables: vscode.Disposable[] = [];
    /** Items of the last inline completion answer, for partial-acceptance reports. */
    private offered: { uri: string; position: vscode.Position; items: OfferedItem[] } | undefined;
    /** Text accepted word by word or line by line from the current suggestion. */
    private acceptedSoFar = '';

    constructor() {
        this.output = vscode.window.createOutputChannel('Infill', { log: true });
        this.statusItem = vscode.window.createStatusBarItem('infill.status', vscode.StatusBarAlignment.Right, 100);
        this.statusItem.name = 'Infill';
        this.statusItem.command = 'infill.showMenu';
        this.showStatus(NOT_RUNNING);
        this.statusItem.show();
        this.disposables.push(this.output, this.statusItem);
    }

    dispose(): void {
        for (const d of [...this.clientDisposables.splice(0), ...this.disposables.splice(0)]) {
            d.dispose();
        }
    }

    private configuration(): vscode.WorkspaceConfiguration {
        return vscode.workspace.getConfiguration(SECTION);
    }

    private showStatus(status: ServerStatus): void {
        const view = statusView(status);
        this.statusItem.text = view.text;
        this.statusItem.tooltip = view.tooltip;
        this.statusItem.backgroundColor = view.severity === 'normal'
            ? undefined
            : new vscode.ThemeColor(`statusBarItem.${view.severity}Background`);
    }

    async start(): Promise<void> {
        if (this.client) {
            return;
        }
        const config = this.configuration();
        const command = config.get<string>('server.command', 'infill');
        const args = config.get<string[]>('server.args', ['serve', '--stdio']);
        const extraEnv = config.get<Record<string, string>>('server.env', {});
        const env = { ...process.env, ...extraEnv };
        const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        const resolved = resolveCommand(command, env.PATH ?? env.Path, cwd);
        if (resolved === null) {
            const message = missingServerMessage(command);
            this.output.appendLine(message);
            this.showStatus({ kind: 'error', message });
            const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Log');
            if (choice === 'Open Settings') {
                await vscode.commands.executeCommand('workbench.action.openSettings', 'infill.server.command');
            } else if (choice === 'Show Log') {
                this.output.show();
            }
            return;
        }
        const serverOptions: ServerOptions = { command: resolved, args, options: { env, cwd } };
        const clientOptions: LanguageClientOptions = {
            documentSelector: [{ scheme: 'file' }, { scheme: 'untitled' }],
            outputChannel: this.output,
            initializationOptions: toServerSettings(config),
            middleware: this.middleware(),
        };
        const client = new LanguageClient('infill', 'Infill', serverOptions, clientOptions);
        this.client = client;
        this.clientDisposables.push(
            client.onNotification(STATUS_NOTIFICATION, (params: unknown) => this.showStatus(parseStatus(params))),
            client.onDidChangeState((event) => {
                if (event.newState === State.Stopped) {
                    this.showStatus(NOT_RUNNING);
                }
            }),
        );
        this.showStatus({ kind: 'starting', message: 'Starting the Infill language server' });
        try {
            await client.start();
        } catch (error) {
            const message = `Infill: the language server \`${resolved} ${args.join(' ')}\` failed to start: ${String(error)}`;
            this.output.appendLine(message);
            this.showStatus({ kind: 'error', message });
            void vscode.window.showErrorMessage(message, 'Show Log').then((choice) => {
                if (choice === 'Show Log') {
                    this.output.show();
                }
            });
        }
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.offered = undefined;
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        if (client) {
            try {
                // dispose() stops the server if it runs (shutdown + exit) and releases the client's resources.
                await client.dispose(5000);
            } catch (error) {
                // A client that never started cannot be stopped; there is nothing left to release then.
                this.output.appendLine(`Infill: stopping the language server: ${String(error)}`);
            }
        }
        this.showStatus(NOT_RUNNING);
    }

    async restart(): Promise<void> {
        await this.stop();
        await this.start();
    }

    private middleware(): Middleware {
        return {
            workspace: {
                // Answer `workspace/configuration` for our section with the same pruned tree we push.
                configuration: async (params, token, next) => {
                    const answers = await next(params, token);
                    if (!Array.isArray(answers)) {
                        return answers;
                    }
                    return params.items.map((item, index) =>
                        item.section === SECTION ? toServerSettings(this.configuration()) : answers[index]);
                },
            },
            provideInlineCompletionItems: async (document, position, context, token, next) => {
                const result = await next(document, position, context, token);
                if (token.isCancellationRequested || !result) {
                    return result;
                }
                const items = Array.isArray(result) ? result : result.items;
                this.remember(document, position, items);
                const first = this.offered?.items[0];
                if (first && this.client) {
                    // VS Code shows the first item of a fresh answer; the stable API has no "shown" hook.
                    void this.client.sendNotification(DID_SHOW, { item: first.item });
                }
                return result;
            },
        };
    }

    private remember(document: vscode.TextDocument, position: vscode.Position,
                     items: readonly vscode.InlineCompletionItem[]): void {
        const client = this.client;
        if (!client) {
            return;
        }
        const offered: OfferedItem[] = [];
        for (const item of items) {
            const insertText = typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
            const range = item.range ?? new vscode.Range(position, position);
            const replaced = document.getText(new vscode.Range(range.start, position));
            offered.push({
                insertText,
                replaced,
                item: {
                    insertText,
                    range: client.code2ProtocolConverter.asRange(range),
                    command: item.command ? client.code2ProtocolConverter.asCommand(item.command) : undefined,
                },
            });
        }
        this.offered = { uri: document.uri.toString(), position, items: offered };
        this.acceptedSoFar = '';
    }

    /** Runs a built-in partial-accept command and reports how much of the suggestion is now accepted. */
    async acceptPartially(builtin: string): Promise<void> {
        const editor = vscode.window.activeTextEditor;
        const inserted: string[] = [];
        const listener = vscode.workspace.onDidChangeTextDocument((event) => {
            if (editor && event.document === editor.document) {
                for (const change of event.contentChanges) {
                    inserted.push(change.text);
                }
            }
        });
        try {
            await vscode.commands.executeCommand(builtin);
        } finally {
            listener.dispose();
        }
        const offered = this.offered;
        if (!editor || !offered || !this.client || offered.uri !== editor.document.uri.toString()) {
            return;
        }
        this.acceptedSoFar += inserted.join('');
        const acceptance = matchPartialAcceptance(offered.items, this.acceptedSoFar);
        if (acceptance) {
            await this.client.sendNotification(DID_PARTIALLY_ACCEPT, acceptance);
        }
    }

    async setEnabled(enabled: boolean): Promise<void> {
        // The server reads `enabled` and answers with a `disabled`/`ready` status; it keeps running meanwhile.
        await this.configuration().update('enabled', enabled, vscode.ConfigurationTarget.Global);
    }

    async onConfigurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
        if (!event.affectsConfiguration(SECTION)) {
            return;
        }
        if (event.affectsConfiguration(`${SECTION}.server`)) {
            await this.restart();
            return;
        }
        if (this.client?.isRunning()) {
            await this.client.sendNotification(DidChangeConfigurationNotification.type,
                didChangeConfigurationParams(this.configuration()));
        }
    }

    async showMenu(): Promise<void> {
        const enabled = this.configuration().get<boolean>('enabled', true);
        const picks: (vscode.QuickPickItem & { command: string })[] = [
            enabled
                ? { label: '$(circle-slash) Disable Infill', command: 'infill.disable' }
                : { label: '$(check) Enable Infill', command: 'infill.enable' },
            { label: '$(debug-restart) Restart the Infill server', command: 'infill.restartServer' },
            { label: '$(output) Show the Infill log', command: 'infill.showLog' },
            { label: '$(sparkle) Trigger a completion', command: 'infill.triggerCompletion' },
            { label: '$(gear) Open Infill settings', command: 'infill.openSettings' },
        ];
        const pick = await vscode.window.showQuickPick(picks, { title: 'Infill' });
        if (pick) {
            await vscode.commands.executeCommand(pick.command);
        }
    }

    registerCommands(): void {
        const register = (name: string, run: () => unknown) =>
            this.disposables.push(vscode.commands.registerCommand(name, run));
        register('infill.enable', () => this.setEnabled(true));
        register('infill.disable', () => this.setEnabled(false));
        register('infill.restartServer', () => this.restart());
        register('infill.showLog', () => this.output.show());
        register('infill.showMenu', () => this.showMenu());
        register('infill.openSettings', () =>
            vscode.commands.executeCommand('workbench.action.openSettings', '@ext:infill.infill'));
        register('infill.triggerCompletion', () => vscode.commands.executeCommand('editor.action.inlineSuggest.trigger'));
        register('infill.acceptNextWord', () => this.acceptPartially('editor.action.inlineSuggest.acceptNextWord'));
        register('infill.acceptNextLine', () => this.acceptPartially('editor.action.inlineSuggest.acceptNextLine'));
        this.disposables.push(vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)));
    }
}

let extension: InfillExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    extension = new InfillExtension();
    context.subscriptions.push(extension);
    extension.registerCommands();
    await extension.start();
}

export async function deactivate(): Promise<void> {
    if (extension) {
        await extension.stop();
        extension = undefined;
    }
}
