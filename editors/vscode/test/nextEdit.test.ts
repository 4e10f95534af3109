/** Next-edit suggestions, the pure part: the answer's shape, ghost text or decorations, and what Tab does. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import {
    advertisedMethod,
    changeOf,
    classify,
    enabledFor,
    firstEdit,
    hintText,
    InlineEdit,
    isCurrent,
    svgBox,
    tabAction,
} from '../src/nextEdit';

const URI = 'file:///w/shapes.py';

function edit(startLine: number, startChar: number, endLine: number, endChar: number, text: string,
              version = 3): InlineEdit {
    return {
        text,
        range: { start: { line: startLine, character: startChar }, end: { line: endLine, character: endChar } },
        textDocument: { uri: URI, version },
        command: { title: 'Accept next edit', command: 'infill.acceptInlineEdit', arguments: ['ne-1'] },
    };
}

describe('firstEdit', () => {
    it('takes the first edit of a copilotInlineEdit answer', () => {
        const e = edit(4, 11, 4, 17, 'size');
        assert.deepEqual(firstEdit({ edits: [e, edit(9, 0, 9, 1, 'x')] }), e);
    });

    it('returns nothing for an empty or malformed answer', () => {
        assert.equal(firstEdit({ edits: [] }), undefined);
        assert.equal(firstEdit(null), undefined);
        assert.equal(firstEdit({ edits: [{ newText: 'x', range: edit(0, 0, 0, 0, '').range }] }), undefined);
        assert.equal(firstEdit({ edits: [{ ...edit(0, 0, 0, 0, 'x'), textDocument: { uri: URI } }] }), undefined);
        // a range that ends before it starts
        assert.equal(firstEdit({ edits: [edit(5, 4, 5, 2, 'x')] }), undefined);
    });
});

describe('isCurrent', () => {
    it('keeps an edit for the document version it was computed for and drops an older one', () => {
        const e = edit(1, 0, 1, 3, 'abc', 7);
        assert.equal(isCurrent(e, URI, 7), true);
        assert.equal(isCurrent(e, URI, 8), false);
        assert.equal(isCurrent(e, 'file:///w/other.py', 7), false);
    });
});

describe('changeOf', () => {
    it('trims what old and new text share at both ends', () => {
        // `width * 2` → `size * 2` at line 4, range covering the whole expression
        const change = changeOf(edit(4, 11, 4, 20, 'size * 2'), 'width * 2');
        assert.deepEqual(change, { start: { line: 4, character: 11 }, removed: 'width', inserted: 'size' });
    });

    it('marks whole words when something is removed, and keeps a pure insertion minimal', () => {
        assert.deepEqual(changeOf(edit(3, 16, 3, 22, 'pts'), 'points'),
            { start: { line: 3, character: 16 }, removed: 'points', inserted: 'pts' });
        assert.deepEqual(changeOf(edit(0, 0, 0, 10, 'total_sum'), 'total_size'),
            { start: { line: 0, character: 0 }, removed: 'total_size', inserted: 'total_sum' });
        assert.deepEqual(changeOf(edit(0, 0, 0, 3, 'return'), 'ret'),
            { start: { line: 0, character: 3 }, removed: '', inserted: 'urn' });
    });

    it('never splits a character outside the BMP (two UTF-16 code units)', () => {
        // 😀 and 😃 share their first code unit
        assert.deepEqual(changeOf(edit(0, 0, 0, 4, 'x 😃'), 'x 😀'),
            { start: { line: 0, character: 2 }, removed: '😀', inserted: '😃' });
        assert.deepEqual(changeOf(edit(0, 0, 0, 3, '😃!'), '😀!'),
            { start: { line: 0, character: 0 }, removed: '😀', inserted: '😃' });
    });

    it('counts line breaks in the shared prefix', () => {
        const change = changeOf(edit(2, 0, 4, 0, 'a = 1\nb = 2\nc = 3\n'), 'a = 1\nb = 0\n');
        assert.deepEqual(change.start, { line: 3, character: 4 });
        assert.equal(change.removed, '0');
        assert.equal(change.inserted, '2\nc = 3');
    });
});

describe('classify (ghost text or decorations)', () => {
    const line = '    return area(width)';

    it('shows an insertion at the cursor as ghost text', () => {
        const display = classify(edit(3, 22, 3, 22, ', height'), '', { line: 3, character: 22 }, line + '');
        assert.deepEqual(display, { kind: 'ghost', range: { start: { line: 3, character: 22 }, end: { line: 3, character: 22 } },
            insertText: ', height' });
    });

    it('shows an insertion after the cursor on its line as ghost text that repeats the text in between', () => {
        // cursor after `return `, the edit inserts `, height` before the closing parenthesis
        const display = classify(edit(3, 16, 3, 22, 'width, height)'), 'width)', { line: 3, character: 11 }, line);
        assert.equal(display.kind, 'ghost');
        if (display.kind === 'ghost') {
            assert.deepEqual(display.range, { start: { line: 3, character: 11 }, end: { line: 3, character: 21 } });
            assert.equal(display.insertText, 'area(width, height');
        }
    });

    it('draws a replacement on the cursor line with decorations (ghost text cannot delete)', () => {
        assert.deepEqual(classify(edit(3, 16, 3, 21, 'size'), 'width', { line: 3, character: 4 }, line), { kind: 'near' });
    });

    it('draws an insertion before the cursor with decorations', () => {
        assert.deepEqual(classify(edit(3, 4, 3, 4, 'x = '), '', { line: 3, character: 10 }, line), { kind: 'near' });
    });

    it('draws an edit within two lines of the cursor with decorations, Tab applies', () => {
        assert.deepEqual(classify(edit(5, 4, 5, 9, 'size'), 'width', { line: 3, character: 0 }, line), { kind: 'near' });
        assert.deepEqual(classify(edit(1, 4, 1, 9, 'size'), 'width', { line: 3, character: 0 }, line), { kind: 'near' });
    });

    it('makes an edit further away a jump', () => {
        assert.deepEqual(classify(edit(6, 4, 6, 9, 'size'), 'width', { line: 3, character: 0 }, line),
            { kind: 'jump', line: 6 });
        assert.deepEqual(classify(edit(0, 0, 0, 5, 'size'), 'width', { line: 3, character: 0 }, line),
            { kind: 'jump', line: 0 });
        // a multi-line edit counts from its last line when the cursor is below it
        assert.deepEqual(classify(edit(0, 0, 1, 5, 'a\nb'), 'x\ny', { line: 3, character: 0 }, line), { kind: 'near' });
    });

    it('names the line in the hint, 1-based', () => {
        assert.match(hintText({ kind: 'jump', line: 6 }), /edit at line 7, Tab/);
        assert.match(hintText({ kind: 'near' }), /Tab to apply/);
    });
});

describe('tabAction (the key flow)', () => {
    it('jumps to an edit away from the cursor, then applies it and leaves the cursor after the new text', () => {
        const e = edit(12, 8, 12, 13, 'size');
        const first = tabAction(e, { line: 2, character: 9 });
        assert.deepEqual(first, { action: 'jump', to: { line: 12, character: 8 } });
        const second = tabAction(e, first.action === 'jump' ? first.to : { line: -1, character: 0 });
        assert.deepEqual(second, { action: 'apply', cursorAfter: { line: 12, character: 12 } });
    });

    it('applies at once when the edit is near', () => {
        assert.deepEqual(tabAction(edit(4, 0, 5, 0, 'a\nbb\n'), { line: 3, character: 0 }),
            { action: 'apply', cursorAfter: { line: 6, character: 0 } });
    });
});

describe('settings and capabilities', () => {
    it('asks only where next edits are on: globally, then per language', () => {
        assert.equal(enabledFor(true, {}, 'python'), true);
        assert.equal(enabledFor(false, {}, 'python'), false);
        assert.equal(enabledFor(true, { markdown: false }, 'markdown'), false);
        assert.equal(enabledFor(true, { markdown: false }, 'python'), true);
        assert.equal(enabledFor(false, { python: true }, 'python'), false);
    });

    it('finds the advertised method, and nothing on a server without next edits', () => {
        const caps = { experimental: { infill: { nextEdit: { method: 'textDocument/copilotInlineEdit',
            acceptCommand: 'infill.acceptInlineEdit' } } } };
        assert.equal(advertisedMethod(caps), 'textDocument/copilotInlineEdit');
        assert.equal(advertisedMethod({}), undefined);
        assert.equal(advertisedMethod({ experimental: { infill: {} } }), undefined);
        assert.equal(advertisedMethod(undefined), undefined);
    });

    it('contributes the settings, commands and the Tab/Escape keys behind the context key', () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
        const props = pkg.contributes.configuration.properties;
        assert.equal(props['infill.nextEdit.enabled'].type, 'boolean');
        assert.equal(props['infill.nextEdit.languages'].type, 'object');
        assert.equal(props['infill.nextEdit.debounceMs'].type, 'integer');
        const keys = pkg.contributes.keybindings.filter((k: { command: string }) => k.command.startsWith('infill.nextEdit'));
        assert.deepEqual(keys.map((k: { key: string }) => k.key).sort(), ['escape', 'tab']);
        for (const k of keys) {
            // Tab and Escape keep their meaning unless a next edit is shown, and VS Code's own suggestions come first.
            assert.match(k.when, /^infill\.nextEditVisible && /);
            assert.match(k.when, /!inlineSuggestionVisible/);
            assert.match(k.when, /!suggestWidgetVisible/);
        }
    });
});

describe('svgBox', () => {
    it('draws every line, escaped, into an SVG data URI', () => {
        const { uri, width, height } = svgBox(['if a < b:', '    return a & b'], 14, 19,
            { text: '#000', background: '#efe', border: '#0a0' });
        assert.ok(uri.startsWith('data:image/svg+xml;base64,'));
        assert.ok(height >= 2 * 19 && width >= 16 * 14 * 0.6, `${width}x${height}`);
        const svg = Buffer.from(uri.slice('data:image/svg+xml;base64,'.length), 'base64').toString('utf8');
        assert.match(svg, /if a &lt; b:/);
        assert.match(svg, /return a &amp; b/);
        assert.equal((svg.match(/<text /g) ?? []).length, 2);
    });
});
