/**
 * Copied and cut text as workspace context. VS Code has no clipboard or copy event in its API, so the extension
 * binds its own copy and cut commands to the usual keys (only while `infill.editor.sendCopies` is on): each runs
 * VS Code's own clipboard action first, then sends the selected text to the server as `infill/didYank`
 * (`{textDocument: {uri}, text, range}`). Copies through menus or other keys are not seen. (Kept free of the
 * `vscode` module so that it is unit-tested in plain Node.)
 */
export const DID_YANK = 'infill/didYank';
/** Larger copies are not hints about the next lines (a whole-file copy), and are not sent. */
export const MAX_CHARS = 4000;

export type Yank = {
    textDocument: { uri: string };
    text: string;
    range: { start: { line: number; character: number }; end: { line: number; character: number } };
};

/** The notifications for the editor's non-empty selections (as the server takes them). */
export function yanksOf(uri: string, selections: { text: string; startLine: number; startCharacter: number;
    endLine: number; endCharacter: number }[]): Yank[] {
    return selections
        .filter((s) => s.text.trim().length > 0 && s.text.length <= MAX_CHARS)
        .map((s) => ({
            textDocument: { uri },
            text: s.text,
            range: { start: { line: s.startLine, character: s.startCharacter },
                end: { line: s.endLine, character: s.endCharacter } },
        }));
}
