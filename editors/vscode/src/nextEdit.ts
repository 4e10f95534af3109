/**
 * Next-edit suggestions, the pure part: reading the server's `textDocument/copilotInlineEdit` answer, deciding how an
 * edit is shown with VS Code's stable API, and what Tab does.
 *
 * VS Code's own inline-edit display (`isInlineEdit`, `showRange`) is a proposed API that a published extension cannot
 * use. With the stable API an edit can be ghost text only when it inserts text on the cursor's line at or after the
 * cursor (an `InlineCompletionItem` range must start and end on the cursor's line). Every other edit is drawn with
 * decorations: Tab applies it when the cursor is within two lines of it, and otherwise first jumps there (the rule of
 * vscode-nes, which keeps Tab from applying an edit the user has not seen). No `vscode` import here, so the rules run
 * under `node --test`.
 */

export interface Position {
    line: number;
    character: number;
}

export interface Range {
    start: Position;
    end: Position;
}

export interface LspCommand {
    title: string;
    command: string;
    arguments?: unknown[];
}

/** One edit of the answer, as the Copilot language server sends it (`text`, not `newText`). */
export interface InlineEdit {
    text: string;
    range: Range;
    textDocument: { uri: string; version: number };
    command?: LspCommand;
}

/** Lines around an edit within which Tab applies it without jumping first. */
export const NEAR_LINES = 2;

function isPosition(value: unknown): value is Position {
    const p = value as Position;
    return typeof p === 'object' && p !== null && Number.isInteger(p.line) && Number.isInteger(p.character)
        && p.line >= 0 && p.character >= 0;
}

function before(a: Position, b: Position): boolean {
    return a.line < b.line || (a.line === b.line && a.character < b.character);
}

/**
 * The first edit of an answer (`{edits: [...]}`), or undefined when there is none or it is malformed. The server
 * sends at most one; a client that shows one is what copilot-lsp does with several.
 */
export function firstEdit(result: unknown): InlineEdit | undefined {
    const edits = (result as { edits?: unknown })?.edits;
    if (!Array.isArray(edits) || edits.length === 0) {
        return undefined;
    }
    const edit = edits[0] as InlineEdit;
    const doc = edit?.textDocument;
    if (typeof edit?.text !== 'string' || !isPosition(edit.range?.start) || !isPosition(edit.range?.end)
        || before(edit.range.end, edit.range.start) || typeof doc?.uri !== 'string' || !Number.isInteger(doc.version)) {
        return undefined;
    }
    return edit;
}

/** Whether an edit still belongs to the document as it is now (an answer for an older version is dropped). */
export function isCurrent(edit: InlineEdit, uri: string, version: number): boolean {
    return edit.textDocument.uri === uri && edit.textDocument.version === version;
}

/** The edit with the text both sides share at the start and the end taken off: what really changes. */
export interface Change {
    /** Where the changed part begins (inside the edit's range). */
    start: Position;
    /** The document text that is removed (may be empty: a pure insertion). */
    removed: string;
    /** The text put in its place (may be empty: a pure deletion). */
    inserted: string;
}

/** Position after walking `text` from `from` (lines split at \n; characters in UTF-16 code units, as VS Code). */
export function advance(from: Position, text: string): Position {
    const lines = text.split('\n');
    if (lines.length === 1) {
        return { line: from.line, character: from.character + text.length };
    }
    return { line: from.line + lines.length - 1, character: lines[lines.length - 1].length };
}

function isHighSurrogate(code: number): boolean {
    return code >= 0xd800 && code <= 0xdbff;
}

function isWord(ch: string | undefined): boolean {
    return ch !== undefined && /[\p{L}\p{N}_]/u.test(ch);
}

/** `old` is the document text in the edit's range. */
export function changeOf(edit: InlineEdit, old: string): Change {
    const text = edit.text;
    let prefix = 0;
    const most = Math.min(old.length, text.length);
    while (prefix < most && old[prefix] === text[prefix]) {
        prefix++;
    }
    if (prefix > 0 && isHighSurrogate(old.charCodeAt(prefix - 1))) {
        prefix--; // never between the two halves of a character outside the BMP
    }
    let suffix = 0;
    while (suffix < most - prefix && old[old.length - 1 - suffix] === text[text.length - 1 - suffix]) {
        suffix++;
    }
    if (suffix > 0 && isHighSurrogate(old.charCodeAt(old.length - suffix - 1))) {
        suffix--;
    }
    if (prefix + suffix < old.length) {
        // Something is removed: mark whole words (`points` → `pts` strikes `points`, not `oin`). A pure insertion
        // stays minimal, as ghost text needs it.
        while (prefix > 0 && isWord(old[prefix - 1]) && (isWord(old[prefix]) || isWord(text[prefix]))) {
            prefix--;
        }
        while (suffix > 0 && isWord(old[old.length - suffix])
            && (isWord(old[old.length - suffix - 1]) || isWord(text[text.length - suffix - 1]))) {
            suffix--;
        }
    }
    return {
        start: advance(edit.range.start, old.slice(0, prefix)),
        removed: old.slice(prefix, old.length - suffix),
        inserted: text.slice(prefix, text.length - suffix),
    };
}

export type Display =
    /** Ordinary ghost text: an `InlineCompletionItem` replacing `range` (cursor → insertion point) by `insertText`. */
    | { kind: 'ghost'; range: Range; insertText: string }
    /** Decorations; Tab applies. */
    | { kind: 'near' }
    /** Decorations and a hint on the cursor line; Tab jumps to `line` first. */
    | { kind: 'jump'; line: number };

/**
 * How to show `edit` with the cursor at `cursor`. `lineText` is the text of the cursor's line, `old` the document
 * text in the edit's range.
 */
export function classify(edit: InlineEdit, old: string, cursor: Position, lineText: string): Display {
    const change = changeOf(edit, old);
    const at = change.start;
    if (change.removed === '' && change.inserted !== '' && at.line === cursor.line && at.character >= cursor.character
        && at.character <= lineText.length) {
        return {
            kind: 'ghost',
            range: { start: cursor, end: at },
            insertText: lineText.slice(cursor.character, at.character) + change.inserted,
        };
    }
    return displayAway(edit, cursor);
}

/** `near` or `jump` for an edit drawn with decorations, from where the cursor is now. */
export function displayAway(edit: InlineEdit, cursor: Position): Display {
    if (cursor.line < edit.range.start.line - NEAR_LINES || cursor.line > edit.range.end.line + NEAR_LINES) {
        return { kind: 'jump', line: edit.range.start.line };
    }
    return { kind: 'near' };
}

export type TabAction = { action: 'jump'; to: Position } | { action: 'apply'; cursorAfter: Position };

/** What Tab does with `edit` shown and the cursor at `cursor`: jump to its start when it is away, else apply it. */
export function tabAction(edit: InlineEdit, cursor: Position): TabAction {
    if (displayAway(edit, cursor).kind === 'jump') {
        return { action: 'jump', to: edit.range.start };
    }
    return { action: 'apply', cursorAfter: endAfterApply(edit) };
}

/** The hint drawn after the cursor's line (lines are 1-based for people). */
export function hintText(display: Display): string {
    if (display.kind === 'jump') {
        return `→ edit at line ${display.line + 1}, Tab (Esc to dismiss)`;
    }
    return '→ Tab to apply the edit, Esc to dismiss';
}

/** Where the cursor goes after the edit is applied: the end of the new text (for chaining to the next one). */
export function endAfterApply(edit: InlineEdit): Position {
    return advance(edit.range.start, edit.text);
}

/** Whether next-edit requests are made for `languageId`: `enabled`, unless `languages` says false for it (the
 * server's rule: a language not listed follows `enabled`). */
export function enabledFor(enabled: boolean, languages: Record<string, unknown> | undefined, languageId: string):
    boolean {
    if (!enabled) {
        return false;
    }
    return languages?.[languageId] !== false;
}

/** The request method the server advertises (`capabilities.experimental.infill.nextEdit.method`), if any. The accept
 *  command it advertises beside it is not needed here: every edit carries its own `command`, which is what runs. */
export function advertisedMethod(capabilities: unknown): string | undefined {
    const nextEdit = (capabilities as { experimental?: { infill?: { nextEdit?: unknown } } })
        ?.experimental?.infill?.nextEdit as { method?: unknown } | undefined;
    return typeof nextEdit?.method === 'string' ? nextEdit.method : undefined;
}

/** Escapes text for an SVG text node. */
function xml(text: string): string {
    return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * A box showing several lines of new text, as an SVG data URI for an `after` decoration (decoration text cannot hold
 * line breaks), with its size in pixels. Monospace, sized from the editor's font size and line height.
 */
export function svgBox(lines: readonly string[], fontSize: number, lineHeight: number, colors: {
    text: string; background: string; border: string }): { uri: string; width: number; height: number } {
    const charWidth = fontSize * 0.6;
    const width = Math.ceil(Math.max(1, ...lines.map((l) => l.replace(/\t/g, '    ').length)) * charWidth + 12);
    const height = Math.ceil(lines.length * lineHeight + 6);
    const rows = lines.map((line, i) =>
        `<text x="6" y="${(i * lineHeight + lineHeight * 0.78 + 3).toFixed(1)}" xml:space="preserve">${
            xml(line.replace(/\t/g, '    '))}</text>`).join('');
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">`
        + `<rect x="0.5" y="0.5" width="${width - 1}" height="${height - 1}" rx="3" fill="${colors.background}" `
        + `stroke="${colors.border}"/><g font-family="monospace" font-size="${fontSize}" fill="${colors.text}">`
        + `${rows}</g></svg>`;
    return { uri: `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`, width, height };
}
