/**
 * Partial acceptance bookkeeping.
 *
 * VS Code's stable API does not tell an extension when the user accepts part of a suggestion (that hook is still a
 * proposed API), so the extension offers its own "accept next word/line" commands: they run VS Code's built-in
 * commands and measure the text those insert. This module holds the pure part: which of the offered items the
 * inserted text came from, and how much of it has been accepted so far.
 */

/** An offered item as the server sent it (the fields the server needs to recognise it). */
export interface OfferedItem {
    insertText: string;
    /** The document text from the item's range start up to the cursor when it was offered (what it replaces). */
    replaced: string;
    /** The LSP item, sent back verbatim. */
    item: unknown;
}

export interface PartialAcceptance {
    item: unknown;
    /**
     * UTF-16 code units of `insertText` accepted so far, counted from the start of `insertText` (so the part the item
     * replaces, already in the document, counts too), as VS Code measures it.
     */
    acceptedLength: number;
}

/**
 * Finds the item whose remaining text starts with everything accepted so far, `accepted` being the text inserted
 * since the suggestion was shown. Returns null when no item matches (the user typed something else meanwhile).
 */
export function matchPartialAcceptance(items: readonly OfferedItem[], accepted: string): PartialAcceptance | null {
    if (accepted.length === 0) {
        return null;
    }
    for (const offered of items) {
        const skipped = offered.insertText.startsWith(offered.replaced) ? offered.replaced.length : 0;
        if (offered.insertText.slice(skipped).startsWith(accepted)) {
            return { item: offered.item, acceptedLength: skipped + accepted.length };
        }
    }
    return null;
}
