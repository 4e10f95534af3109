/**
 * The VS Code side of Infill: starts `infill serve --stdio` through vscode-languageclient, shows the server's
 * `textDocument/inlineCompletion` answers as ghost text (VS Code runs each item's acceptance `command`), pushes the
 * `infill.*` settings to the server, and shows the server's status in the status bar. Next-edit suggestions
 * (`textDocument/copilotInlineEdit`) are shown by nextEditController.ts.
 *
 * The inline completion provider is registered at activation, not when the server has started: VS Code asks a
 * provider once per edit and does not ask again when a provider appears later, so text typed while the server starts
 * would otherwise never get a suggestion. Until the server is ready, the provider waits for it.
 */
import * as vscode from 'vscode';
import {
    ClientCapabilities,
    CloseAction,
    DidChangeConfigurationNotification,
    DynamicFeature,
    FeatureState,
    InlineCompletionRequest,
    LanguageClient,
    LanguageClientOptions,
    Middleware,
    ServerOptions,
    State,
    StaticFeature,
} from 'vscode-languageclient/node';

import { DID_YANK, Yank, yanksOf } from './copies';
import { NextEditController } from './nextEditController';
import { matchPartialAcceptance, OfferedItem } from './partial';
import { checkoutRoots, DEFAULT_COMMAND, findServer, launchOf, missingServerMessage } from './serverCommand';
import { didChangeConfigurationParams, toServerSettings } from './settings';
import { NOT_RUNNING, parseStatus, ServerStatus, statusView } from './status';

const SECTION = 'infill';
const STATUS_NOTIFICATION = 'infill/didChangeStatus';
const DID_SHOW = 'textDocument/didShowCompletion';
const DID_PARTIALLY_ACCEPT = 'textDocument/didPartiallyAcceptCompletion';

/** The status when the server stopped without being asked to. */
const STOPPED_BY_ITSELF = 'Infill: the language server stopped (its log: Infill: Show Log). Infill: Restart Server '
    + 'starts it again.';

/** The documents the client syncs as text documents: files on disk and unsaved editors. */
const DOCUMENT_SELECTOR: vscode.DocumentSelector = [{ scheme: 'file' }, { scheme: 'untitled' }];

/** Where ghost text is offered: those and notebook cells, which the client syncs through the server's
 * `notebookDocumentSync` (every notebook), so that the server completes a cell with the code of the cells around it. */
const INLINE_SELECTOR: vscode.DocumentSelector = [...DOCUMENT_SELECTOR, { scheme: 'vscode-notebook-cell' }];

/**
 * vscode-languageclient registers its own inline completion provider only once the server has answered `initialize`.
 * This client leaves that built-in feature out (the extension's provider, registered at activation, sends the
 * requests instead) and declares the capability itself, so the server sees the same client capabilities.
 */
class InfillLanguageClient extends LanguageClient {
    override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
        if (DynamicFeature.is(feature) && feature.registrationType.method === InlineCompletionRequest.method) {
            super.registerFeature(INLINE_COMPLETION_CAPABILITY);
            return;
        }
        super.registerFeature(feature);
    }
}

const INLINE_COMPLETION_CAPABILITY: StaticFeature = {
    fillClientCapabilities(capabilities: ClientCapabilities): void {
        capabilities.textDocument = capabilities.textDocument ?? {};
        // Static only: the provider lives for the whole session, a server cannot register or unregister it.
        capabilities.textDocument.inlineCompletion = { dynamicRegistration: false };
    },
    initialize(): void {},
    getState(): FeatureState {
        return { kind: 'static' };
    },
    clear(): void {},
};

/** Resolves with `promise`'s value, or with undefined as soon as `token` is cancelled. */
function unlessCancelled<T>(promise: Promise<T>, token: vscode.CancellationToken): Promise<T | undefined> {
    if (token.isCancellationRequested) {
        return Promise.resolve(undefined);
    }
    return new Promise((resolve, reject) => {
        const listener = token.onCancellationRequested(() => {
            listener.dispose();
            resolve(undefined);
        });
        promise.then((value) => {
            listener.dispose();
            resolve(value);
        }, (error: unknown) => {
            listener.dispose();
            reject(error);
        });
    });
}

class InfillExtension implements vscode.Disposable, vscode.InlineCompletionItemProvider {
    private client: LanguageClient | undefined;
    private readonly output: vscode.LogOutputChannel;
    private readonly statusItem: vscode.StatusBarItem;
    private readonly disposables: vscode.Disposable[] = [];
    /** Listeners tied to the current client, dropped with it on stop/restart. */
    private clientDisposables: vscode.Disposable[] = [];
    /** Items of the last inline completion answer, for partial-acceptance reports. */
    private offered: { uri: string; position: vscode.Position; items: OfferedItem[] } | undefined;
    /** The document version the last inline completion answer with items was for (NES ghost text then waits). */
    private offeredVersion: { uri: string; version: number } | undefined;
    /** Next-edit suggestions (nextEditController.ts). */
    nextEdit: NextEditController | undefined;
    /** Text accepted word by word or line by line from the current suggestion. */
    private acceptedSoFar = '';
    /** The running client once it has started, undefined when it is stopped or failed to start. Completion requests
     * that arrive while the server starts (or restarts) wait on this. */
    private clientReady: Promise<LanguageClient | undefined> = Promise.resolve(undefined);
    /** Settles `clientReady` while a start is under way. */
    private settleReady: ((client: LanguageClient | undefined) => void) | undefined;

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
        // Screen readers read this instead of the icon; it carries the server's message (e.g. why it failed).
        this.statusItem.accessibilityInformation = { label: view.label };
        this.statusItem.backgroundColor = view.severity === 'normal'
            ? undefined
            : new vscode.ThemeColor(`statusBarItem.${view.severity}Background`);
    }

    /** Makes completion requests wait for the start that is about to begin (a no-op when one is already pending). */
    private expectStart(): void {
        if (this.settleReady) {
            return;
        }
        this.clientReady = new Promise((resolve) => {
            this.settleReady = resolve;
        });
    }

    private settleStart(client: LanguageClient | undefined): void {
        const settle = this.settleReady;
        this.settleReady = undefined;
        if (settle) {
            settle(client);
        } else {
            this.clientReady = Promise.resolve(client);
        }
    }

    async start(): Promise<void> {
        if (this.client) {
            return;
        }
        this.expectStart();
        try {
            await this.startClient();
        } finally {
            // (read through a method: TypeScript would keep `this.client` narrowed to undefined across the await)
            this.settleStart(this.runningClient());
        }
    }

    private runningClient(): LanguageClient | undefined {
        return this.client?.isRunning() ? this.client : undefined;
    }

    private async startClient(): Promise<void> {
        const config = this.configuration();
        const launch = launchOf(config.get<unknown>('server.command', DEFAULT_COMMAND),
            config.get<unknown>('server.args', ['serve', '--stdio']), config.get<unknown>('server.env', {}));
        if ('problem' in launch) {
            await this.reportNotStarted(launch.problem, 'infill.server');
            return;
        }
        const { command, args } = launch;
        const env = { ...process.env, ...launch.env };
        const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
        const lookup = findServer(command, env.PATH ?? env.Path, cwd, checkoutRoots());
        const resolved = lookup.path;
        if (resolved === null) {
            await this.reportNotStarted(missingServerMessage(lookup), 'infill.server.command');
            return;
        }
        this.output.appendLine(`Infill: starting ${resolved} ${args.join(' ')}`);
        const serverOptions: ServerOptions = { command: resolved, args, options: { env, cwd } };
        const clientOptions: LanguageClientOptions = {
            documentSelector: DOCUMENT_SELECTOR as LanguageClientOptions['documentSelector'],
            outputChannel: this.output,
            initializationOptions: toServerSettings(config),
            middleware: this.middleware(),
            errorHandler: {
                error: (error, message, count) => defaultHandler.error(error, message, count),
                // A client stopped while it started (see the catch below) must not restart its server.
                closed: () => this.client === client ? defaultHandler.closed()
                    : { action: CloseAction.DoNotRestart, handled: true },
            },
        };
        const client = new InfillLanguageClient('infill', 'Infill', serverOptions, clientOptions);
        const defaultHandler = client.createDefaultErrorHandler();
        this.client = client;
        this.clientDisposables.push(
            client.onNotification(STATUS_NOTIFICATION, (params: unknown) => this.showStatus(parseStatus(params))),
            client.onDidChangeState((event) => {
                // stop() drops these listeners before it stops the client: a stop seen here is the server's own (it
                // exited or crashed, and vscode-languageclient restarts it a few times before it gives up).
                if (event.newState === State.Stopped) {
                    this.nextEdit?.serverStopped();
                    this.showStatus({ kind: 'error', message: STOPPED_BY_ITSELF });
                } else if (event.newState === State.Starting) {
                    this.showStatus({ kind: 'starting', message: 'Starting the Infill language server' });
                }
            }),
        );
        this.showStatus({ kind: 'starting', message: 'Starting the Infill language server' });
        try {
            await client.start();
        } catch (error) {
            if (this.client !== client) {
                // Stopped while it started (Restart Server, a server setting changed, deactivation): not a failure.
                this.output.appendLine(`Infill: a language server start was abandoned: ${String(error)}`);
                return;
            }
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

    /** A server that could not be started: the log, the status item and one notification say why. */
    private async reportNotStarted(message: string, setting: string): Promise<void> {
        this.output.appendLine(message);
        this.showStatus({ kind: 'error', message });
        const choice = await vscode.window.showErrorMessage(message, 'Open Settings', 'Show Log');
        if (choice === 'Open Settings') {
            await vscode.commands.executeCommand('workbench.action.openSettings', setting);
        } else if (choice === 'Show Log') {
            this.output.show();
        }
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.offered = undefined;
        this.nextEdit?.serverStopped();
        for (const d of this.clientDisposables.splice(0)) {
            d.dispose();
        }
        if (!this.settleReady) {
            this.clientReady = Promise.resolve(undefined);
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
        // Requests made while the old server stops and the new one starts wait for the new one.
        this.expectStart();
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
        };
    }

    /** The inline completion provider, registered at activation (see the file comment). */
    async provideInlineCompletionItems(document: vscode.TextDocument, position: vscode.Position,
                                       context: vscode.InlineCompletionContext, token: vscode.CancellationToken,
    ): Promise<vscode.InlineCompletionItem[] | vscode.InlineCompletionList | undefined> {
        // A next-edit suggestion that is an insertion at the cursor is shown as ordinary ghost text.
        const nextEdit = this.nextEdit?.ghostItem(document, position);
        if (nextEdit) {
            return [nextEdit];
        }
        const client = await unlessCancelled(this.clientReady, token);
        if (!client || token.isCancellationRequested || !client.initializeResult?.capabilities.inlineCompletionProvider) {
            return undefined;
        }
        let result: vscode.InlineCompletionItem[] | vscode.InlineCompletionList | undefined;
        try {
            const answer = await client.sendRequest(InlineCompletionRequest.type,
                client.code2ProtocolConverter.asInlineCompletionParams(document, position, context), token);
            if (token.isCancellationRequested) {
                return undefined;
            }
            result = await client.protocol2CodeConverter.asInlineCompletionResult(answer, token);
        } catch (error) {
            return client.handleFailedRequest(InlineCompletionRequest.type, token, error, undefined);
        }
        if (token.isCancellationRequested || !result) {
            return result;
        }
        const items = Array.isArray(result) ? result : result.items;
        this.offeredVersion = items.length > 0 ? { uri: document.uri.toString(), version: document.version } : undefined;
        this.remember(document, position, items);
        const first = this.offered?.items[0];
        if (first && this.client === client) {
            // VS Code shows the first item of a fresh answer; the stable API has no "shown" hook.
            void client.sendNotification(DID_SHOW, { item: first.item });
        }
        return result;
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

    /** Whether the last inline completion answer, with items, was for this document version. */
    completionOffered(document: vscode.TextDocument): boolean {
        return this.offeredVersion?.uri === document.uri.toString() && this.offeredVersion.version === document.version;
    }

    registerNextEdit(): void {
        this.nextEdit = new NextEditController({
            client: () => this.runningClient(),
            configuration: () => this.configuration(),
            output: this.output,
            completionOffered: (document) => this.completionOffered(document),
            handles: (document) => vscode.languages.match(DOCUMENT_SELECTOR, document) > 0,
        });
        const nextEdit = this.nextEdit;
        const register = (name: string, run: () => unknown) =>
            this.disposables.push(vscode.commands.registerCommand(name, run));
        this.disposables.push(nextEdit);
        register('infill.nextEdit.trigger', () => nextEdit.triggerNow());
        register('infill.nextEdit.tab', () => nextEdit.tab());
        register('infill.nextEdit.apply', () => nextEdit.apply());
        register('infill.nextEdit.dismiss', () => nextEdit.dismiss());
    }

    registerProvider(): void {
        this.disposables.push(vscode.languages.registerInlineCompletionItemProvider(INLINE_SELECTOR, this));
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
        const report = (yank: unknown) => this.client?.isRunning() && this.client.sendNotification(DID_YANK, yank);
        register('infill.copy', () => copyAndReport('editor.action.clipboardCopyAction', report));
        register('infill.cut', () => copyAndReport('editor.action.clipboardCutAction', report));
        this.disposables.push(vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)));
    }
}

/** Runs VS Code's clipboard `action`, then reports what was copied through `send`. */
async function copyAndReport(action: string, send: (yank: Yank) => unknown): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const yanks = editor
        ? yanksOf(editor.document.uri.toString(), editor.selections.map((s) => ({
            text: editor.document.getText(s), startLine: s.start.line, startCharacter: s.start.character,
            endLine: s.end.line, endCharacter: s.end.character })))
        : [];
    await vscode.commands.executeCommand(action);
    for (const yank of yanks) {
        await send(yank);
    }
}

let extension: InfillExtension | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    extension = new InfillExtension();
    context.subscriptions.push(extension);
    extension.registerCommands();
    extension.registerNextEdit();
    extension.registerProvider();
    await extension.start();
}

export async function deactivate(): Promise<void> {
    if (extension) {
        await extension.stop();
        extension = undefined;
    }
}
