/**
 * Next-edit suggestions in the editor: asks the server (`textDocument/copilotInlineEdit`) after the user edits, shows
 * the answer as ghost text or decorations (see nextEdit.ts for which), and runs the keys: Tab jumps to an edit away
 * from the cursor, Tab again applies it, Esc dismisses it. The keys are bound only while the context key
 * `infill.nextEditVisible` is set, so Tab and Esc keep their usual meaning otherwise.
 *
 * Every applied edit runs the edit's command (the server counts it and remembers it for propagation) and asks again
 * at once: a rename proposed three times down the file is Tab, Tab, Tab, Tab... An answer whose version is not the
 * document's current one is dropped, and a new change cancels the request in flight.
 */
import * as vscode from 'vscode';
import { ExecuteCommandRequest, LanguageClient } from 'vscode-languageclient/node';

import {
    advertisedMethod,
    changeOf,
    classify,
    Display,
    displayAway,
    enabledFor,
    endAfterApply,
    firstEdit,
    hintText,
    InlineEdit,
    isCurrent,
    svgBox,
    tabAction,
} from './nextEdit';

export const CONTEXT_KEY = 'infill.nextEditVisible';
const DID_SHOW = 'textDocument/didShowInlineEdit';
const DID_FOCUS = 'textDocument/didFocus';
const GHOST_ACCEPTED = 'infill.nextEdit.acceptedGhost';
/** LSP trigger kinds (InlineCompletionTriggerKind): 1 = invoked (explicit, or chained after an accept), 2 = automatic. */
const INVOKED = 1;
const AUTOMATIC = 2;

export interface NextEditHost {
    /** The running language client, if any. */
    client(): LanguageClient | undefined;
    configuration(): vscode.WorkspaceConfiguration;
    output: vscode.LogOutputChannel;
    /** Whether an ordinary inline completion is offered for this document version (then no NES ghost text). */
    completionOffered(document: vscode.TextDocument): boolean;
    /** Whether the server has this document (the client syncs files and untitled editors only: not the settings
     * JSON editor, git: or vscode-notebook-cell: documents, output channels). */
    handles(document: vscode.TextDocument): boolean;
}

interface Shown {
    editor: vscode.TextEditor;
    edit: InlineEdit;
    display: Display;
}

interface Ghost {
    uri: string;
    version: number;
    position: vscode.Position;
    item: vscode.InlineCompletionItem;
}

export class NextEditController implements vscode.Disposable {
    private readonly disposables: vscode.Disposable[] = [];
    private readonly removedType: vscode.TextEditorDecorationType;
    private readonly insertedType: vscode.TextEditorDecorationType;
    private readonly hintType: vscode.TextEditorDecorationType;
    private timer: NodeJS.Timeout | undefined;
    private inFlight: vscode.CancellationTokenSource | undefined;
    private shown: Shown | undefined;
    private ghost: Ghost | undefined;
    /** The version an applied edit produced: its change event must not schedule a request (the chain asks at once). */
    private appliedVersion: { uri: string; version: number } | undefined;

    constructor(private readonly host: NextEditHost) {
        this.removedType = vscode.window.createTextEditorDecorationType({
            backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'),
            textDecoration: 'line-through',
            overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.deletedForeground'),
            overviewRulerLane: vscode.OverviewRulerLane.Right,
        });
        this.insertedType = vscode.window.createTextEditorDecorationType({
            overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.addedForeground'),
            overviewRulerLane: vscode.OverviewRulerLane.Right,
        });
        this.hintType = vscode.window.createTextEditorDecorationType({
            after: {
                color: new vscode.ThemeColor('editorCodeLens.foreground'),
                fontStyle: 'italic',
                margin: '0 0 0 2em',
            },
        });
        this.disposables.push(this.removedType, this.insertedType, this.hintType,
            vscode.workspace.onDidChangeTextDocument((event) => this.onDidChangeDocument(event)),
            vscode.window.onDidChangeTextEditorSelection((event) => this.onDidChangeSelection(event)),
            vscode.window.onDidChangeActiveTextEditor((editor) => this.onDidChangeEditor(editor)),
            vscode.workspace.onDidChangeConfiguration((event) => this.onDidChangeConfiguration(event)),
            vscode.commands.registerCommand(GHOST_ACCEPTED, (command: unknown, uri: unknown) =>
                this.ghostAccepted(command, uri)));
    }

    dispose(): void {
        this.clear();
        for (const d of this.disposables.splice(0)) {
            d.dispose();
        }
    }

    private settings(): { enabled: boolean; languages: Record<string, unknown>; debounceMs: number } {
        const config = this.host.configuration();
        return {
            enabled: config.get<boolean>('enabled', true) && config.get<boolean>('nextEdit.enabled', true),
            languages: config.get<Record<string, unknown>>('nextEdit.languages', {}),
            debounceMs: Math.max(0, config.get<number>('nextEdit.debounceMs', 150)),
        };
    }

    // Requests --------------------------------------------------------------------------------------------------

    private onDidChangeDocument(event: vscode.TextDocumentChangeEvent): void {
        const editor = vscode.window.activeTextEditor;
        if (event.contentChanges.length === 0 || editor?.document !== event.document) {
            return;
        }
        // The document moved on: what is shown and what is asked for belong to an older version.
        this.clear();
        const uri = event.document.uri.toString();
        if (this.appliedVersion?.uri === uri && this.appliedVersion.version === event.document.version) {
            return;
        }
        if (event.reason === vscode.TextDocumentChangeReason.Undo || event.reason === vscode.TextDocumentChangeReason.Redo) {
            return; // undoing is not an edit to continue
        }
        this.schedule(editor);
    }

    private schedule(editor: vscode.TextEditor): void {
        const { debounceMs } = this.settings();
        this.timer = setTimeout(() => {
            this.timer = undefined;
            void this.request(editor, AUTOMATIC);
        }, debounceMs);
    }

    /** `Infill: Suggest the Next Edit`: asks now, for the cursor of the active editor. */
    async triggerNow(): Promise<void> {
        const editor = vscode.window.activeTextEditor;
        if (editor) {
            this.clear();
            await this.request(editor, INVOKED);
        }
    }

    private cancelPending(): void {
        if (this.timer) {
            clearTimeout(this.timer);
            this.timer = undefined;
        }
        if (this.inFlight) {
            this.inFlight.cancel(); // vscode-languageclient sends $/cancelRequest
            this.inFlight.dispose();
            this.inFlight = undefined;
        }
    }

    async request(editor: vscode.TextEditor, triggerKind: number): Promise<void> {
        const client = this.host.client();
        const document = editor.document;
        const advertised = client && advertisedMethod(client.initializeResult?.capabilities);
        const { enabled, languages } = this.settings();
        if (!client || !advertised || !enabledFor(enabled, languages, document.languageId)
            || !this.host.handles(document)) {
            return;
        }
        this.cancelPending();
        const source = new vscode.CancellationTokenSource();
        this.inFlight = source;
        const version = document.version;
        const params = {
            textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri), version },
            position: client.code2ProtocolConverter.asPosition(editor.selection.active),
            context: { triggerKind },
        };
        let result: unknown;
        try {
            result = await client.sendRequest(advertised, params, source.token);
        } catch (error) {
            if (!source.token.isCancellationRequested) {
                this.host.output.warn(`Infill: next-edit request failed: ${String(error)}`);
            }
            return;
        } finally {
            if (this.inFlight === source) {
                this.inFlight = undefined;
            }
            source.dispose();
        }
        const edit = firstEdit(result);
        // Out of order, outdated or for another editor: dropped.
        if (source.token.isCancellationRequested || !edit || vscode.window.activeTextEditor !== editor
            || !isCurrent(edit, params.textDocument.uri, document.version)) {
            return;
        }
        this.show(editor, edit, client);
    }

    // Showing ---------------------------------------------------------------------------------------------------

    private show(editor: vscode.TextEditor, edit: InlineEdit, client: LanguageClient): void {
        const document = editor.document;
        const range = client.protocol2CodeConverter.asRange(edit.range);
        const old = document.getText(range);
        if (old === edit.text) {
            return; // nothing would change
        }
        const cursor = editor.selection.active;
        const display = classify(edit, old, cursor, document.lineAt(cursor.line).text);
        // Ghost text needs VS Code's inline suggestions on, and no ordinary completion offered at this version.
        const inlineSuggest = vscode.workspace.getConfiguration('editor', document)
            .get<boolean>('inlineSuggest.enabled', true);
        if (display.kind === 'ghost' && inlineSuggest && editor.selection.isEmpty
            && !this.host.completionOffered(document)) {
            const item = new vscode.InlineCompletionItem(display.insertText, new vscode.Range(
                cursor, new vscode.Position(display.range.end.line, display.range.end.character)));
            if (edit.command) {
                item.command = { title: edit.command.title, command: GHOST_ACCEPTED,
                    arguments: [edit.command, document.uri.toString()] };
            }
            this.ghost = { uri: document.uri.toString(), version: document.version, position: cursor, item };
            this.reportShown(client, edit);
            void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
            return;
        }
        this.shown = { editor, edit, display: display.kind === 'ghost' ? displayAway(edit, cursor) : display };
        this.render();
        void vscode.commands.executeCommand('setContext', CONTEXT_KEY, true);
        this.reportShown(client, edit);
    }

    private reportShown(client: LanguageClient, edit: InlineEdit): void {
        if (edit.command) {
            void client.sendNotification(DID_SHOW, { item: { command: edit.command } });
        }
    }

    /** The NES ghost text for the inline completion provider, when one waits for exactly this place. */
    ghostItem(document: vscode.TextDocument, position: vscode.Position): vscode.InlineCompletionItem | undefined {
        const ghost = this.ghost;
        if (ghost && ghost.uri === document.uri.toString() && ghost.version === document.version
            && ghost.position.isEqual(position)) {
            return ghost.item;
        }
        return undefined;
    }

    private render(): void {
        const shown = this.shown;
        if (!shown) {
            return;
        }
        const { editor, edit } = shown;
        const document = editor.document;
        const range = new vscode.Range(edit.range.start.line, edit.range.start.character,
            edit.range.end.line, edit.range.end.character);
        const change = changeOf(edit, document.getText(range));
        const start = new vscode.Position(change.start.line, change.start.character);
        const removedEnd = document.positionAt(document.offsetAt(start) + change.removed.length);
        editor.setDecorations(this.removedType, change.removed ? [new vscode.Range(start, removedEnd)] : []);
        const inserted: vscode.DecorationOptions[] = [];
        if (change.inserted) {
            const lines = change.inserted.split('\n');
            const after: vscode.ThemableDecorationAttachmentRenderOptions = lines.length === 1
                ? {
                    contentText: change.inserted,
                    color: new vscode.ThemeColor('editor.foreground'),
                    backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground'),
                    border: '1px solid',
                    borderColor: new vscode.ThemeColor('editorGutter.addedBackground'),
                }
                : this.box(lines);
            inserted.push({ range: new vscode.Range(removedEnd, removedEnd), renderOptions: { after } });
        }
        editor.setDecorations(this.insertedType, inserted);
        const cursorLine = editor.selection.active.line;
        const hint = new vscode.Range(cursorLine, Number.MAX_SAFE_INTEGER, cursorLine, Number.MAX_SAFE_INTEGER);
        editor.setDecorations(this.hintType, [{ range: document.validateRange(hint),
            renderOptions: { after: { contentText: hintText(shown.display) } } }]);
        if (shown.display.kind === 'jump') {
            this.host.output.debug(`Infill: next edit at line ${shown.display.line + 1}`);
        }
    }

    /** A multi-line insertion: an SVG box after the line's text, laid over the lines below it (absolutely
     * positioned at its place, so the line keeps its height; the CSS goes in through `textDecoration`, the usual
     * way for decoration styles the API does not name). */
    private box(lines: string[]): vscode.ThemableDecorationAttachmentRenderOptions {
        const editorConfig = vscode.workspace.getConfiguration('editor');
        const fontSize = editorConfig.get<number>('fontSize', 14);
        const lineHeight = editorConfig.get<number>('lineHeight', 0) || Math.round(fontSize * 1.35);
        const dark = vscode.window.activeColorTheme.kind !== vscode.ColorThemeKind.Light
            && vscode.window.activeColorTheme.kind !== vscode.ColorThemeKind.HighContrastLight;
        const box = svgBox(lines, fontSize, lineHeight, dark
            ? { text: '#d4d4d4', background: '#1f3a27', border: '#3fa950' }
            : { text: '#1f2328', background: '#e6ffec', border: '#2da44e' });
        return {
            contentIconPath: vscode.Uri.parse(box.uri),
            width: `${box.width}px`,
            height: `${box.height}px`,
            margin: '0 0 0 1ch',
            textDecoration: 'none; position: absolute; z-index: 10; pointer-events: none',
        };
    }

    private onDidChangeSelection(event: vscode.TextEditorSelectionChangeEvent): void {
        const shown = this.shown;
        if (shown && event.textEditor === shown.editor) {
            shown.display = displayAway(shown.edit, event.selections[0].active);
            this.render();
        }
    }

    private onDidChangeEditor(editor: vscode.TextEditor | undefined): void {
        this.clear();
        this.cancelPending();
        const client = this.host.client();
        if (editor && client?.isRunning() && advertisedMethod(client.initializeResult?.capabilities)
            && this.host.handles(editor.document)) {
            void client.sendNotification(DID_FOCUS, { textDocument: { uri: editor.document.uri.toString() } });
        }
    }

    /** Next edits turned off (`infill.enabled`, `infill.nextEdit.*`) for the document: what is shown goes at once,
     * and Tab is Tab again. */
    private onDidChangeConfiguration(event: vscode.ConfigurationChangeEvent): void {
        if (!event.affectsConfiguration('infill.enabled') && !event.affectsConfiguration('infill.nextEdit')) {
            return;
        }
        const document = this.shown?.editor.document ?? vscode.window.activeTextEditor?.document;
        const { enabled, languages } = this.settings();
        if (document && enabledFor(enabled, languages, document.languageId)) {
            return;
        }
        this.withdraw();
    }

    /** The server stopped (Infill: Restart Server, a changed `infill.server.*` setting, a crash): what it proposed
     * goes, so Tab cannot apply it and report it to a server that never proposed it. */
    serverStopped(): void {
        this.withdraw();
    }

    /** Removes what is shown, the NES ghost text too. */
    private withdraw(): void {
        const ghost = this.ghost !== undefined;
        this.clear();
        if (ghost) {
            void vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
        }
    }

    /** Removes what is shown (decorations, context key, pending ghost text) and cancels what is asked for. */
    private clear(): void {
        this.cancelPending();
        this.ghost = undefined;
        if (this.shown) {
            const editor = this.shown.editor;
            this.shown = undefined;
            for (const type of [this.removedType, this.insertedType, this.hintType]) {
                editor.setDecorations(type, []);
            }
            void vscode.commands.executeCommand('setContext', CONTEXT_KEY, false);
        }
    }

    // Keys ------------------------------------------------------------------------------------------------------

    /** Tab: jumps to an edit away from the cursor, applies one near it; a plain Tab when nothing is shown. */
    async tab(): Promise<void> {
        const shown = this.shown;
        if (!shown || vscode.window.activeTextEditor !== shown.editor) {
            await vscode.commands.executeCommand('tab');
            return;
        }
        const action = tabAction(shown.edit, shown.editor.selection.active);
        if (action.action === 'jump') {
            const start = new vscode.Position(action.to.line, action.to.character);
            shown.editor.selection = new vscode.Selection(start, start); // (re-renders through the selection event)
            shown.editor.revealRange(new vscode.Range(start, start), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
            return;
        }
        await this.apply();
    }

    /** Applies the shown edit, reports it (the edit's command) and asks for the next one. */
    async apply(): Promise<void> {
        const shown = this.shown;
        const client = this.host.client();
        if (!shown || !client) {
            return;
        }
        const { editor, edit } = shown;
        const document = editor.document;
        if (!isCurrent(edit, client.code2ProtocolConverter.asUri(document.uri), document.version)) {
            this.clear();
            return;
        }
        this.clear();
        const range = client.protocol2CodeConverter.asRange(edit.range);
        this.appliedVersion = { uri: document.uri.toString(), version: document.version + 1 };
        const applied = await editor.edit((builder) => builder.replace(range, edit.text),
            { undoStopBefore: true, undoStopAfter: true });
        if (!applied) {
            this.appliedVersion = undefined;
            return;
        }
        const end = endAfterApply(edit);
        const cursor = new vscode.Position(end.line, end.character);
        editor.selection = new vscode.Selection(cursor, cursor);
        const version = document.version;
        await this.accepted(client, edit.command);
        // Not when the text moved on meanwhile: an undo before the server acknowledged the accept is no edit to
        // continue (the request would propose the undone edit again), and a change asks by itself.
        if (vscode.window.activeTextEditor === editor && document.version === version) {
            await this.request(editor, INVOKED);
        }
    }

    private async accepted(client: LanguageClient, command: InlineEdit['command']): Promise<void> {
        if (!command) {
            return;
        }
        try {
            await client.sendRequest(ExecuteCommandRequest.type, { command: command.command, arguments: command.arguments });
        } catch (error) {
            this.host.output.warn(`Infill: ${command.command} failed: ${String(error)}`);
        }
    }

    /** Run by VS Code when NES ghost text is accepted with Tab: report it, then ask for the next edit. */
    private async ghostAccepted(command: unknown, uri: unknown): Promise<void> {
        const client = this.host.client();
        this.ghost = undefined;
        if (!client) {
            return;
        }
        const before = vscode.window.activeTextEditor?.document;
        const version = before?.version;
        await this.accepted(client, command as InlineEdit['command']);
        const editor = vscode.window.activeTextEditor;
        // (as after apply(): not when the text moved on while the accept was reported)
        if (editor && editor.document.uri.toString() === uri && editor.document === before
            && editor.document.version === version) {
            if (this.timer) {
                clearTimeout(this.timer);
                this.timer = undefined;
            }
            await this.request(editor, INVOKED);
        }
    }

    /** Esc: hides the shown edit. */
    dismiss(): void {
        this.clear();
    }
}
