/** The extension's pure parts: settings sent to the server, the status bar mapping, partial acceptance, PATH lookup. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { matchPartialAcceptance, OfferedItem } from '../src/partial';
import { resolveCommand } from '../src/serverCommand';
import { didChangeConfigurationParams, toServerSettings } from '../src/settings';
import { parseStatus, statusView } from '../src/status';

describe('toServerSettings', () => {
    it('drops client-only keys, unset values and tables left empty', () => {
        const raw = {
            server: { command: 'infill', args: ['serve', '--stdio'] },
            trace: { server: 'off' },
            enabled: false,
            completion: { kind: 'local', model: null, apiKeyEnv: undefined, local: { binary: null } },
            exclude: [],
            get: () => 1,
        };
        assert.deepEqual(toServerSettings(raw), { enabled: false, completion: { kind: 'local' }, exclude: [] });
    });

    it('wraps the settings under the `infill` section for didChangeConfiguration', () => {
        assert.deepEqual(didChangeConfigurationParams({ maxTokens: 8 }), { settings: { infill: { maxTokens: 8 } } });
        assert.deepEqual(toServerSettings(null), {});
    });
});

describe('status', () => {
    it('shows the loading percentage while starting', () => {
        const view = statusView(parseStatus({ kind: 'starting', message: 'Loading model', percent: 41.6 }));
        assert.match(view.text, /Infill 42%$/);
        assert.match(view.tooltip, /Loading model/);
        assert.equal(view.severity, 'normal');
    });

    it('turns an error status into an error item carrying the message and detail', () => {
        const view = statusView(parseStatus({ kind: 'error', message: 'llama-server exited', detail: 'see the log' }));
        assert.equal(view.severity, 'error');
        assert.match(view.tooltip, /llama-server exited[\s\S]*see the log/);
        assert.equal(view.label, 'Infill error: llama-server exited');
    });

    it('reports malformed notifications instead of ignoring them', () => {
        assert.equal(parseStatus({ kind: 'sleepy', message: 'x' }).kind, 'error');
        assert.match(parseStatus(42).message, /expected an object/);
    });
});

describe('matchPartialAcceptance', () => {
    const items: OfferedItem[] = [
        { insertText: 'return a + b', replaced: '', item: { id: 1 } },
        { insertText: '    return a - b', replaced: '    ', item: { id: 2 } },
    ];

    it('finds the item the accepted text came from and counts from the start of its insertText', () => {
        assert.deepEqual(matchPartialAcceptance(items, 'return a '), { item: { id: 1 }, acceptedLength: 9 });
        assert.deepEqual(matchPartialAcceptance(items, 'return a - '), { item: { id: 2 }, acceptedLength: 15 });
    });

    it('matches nothing when the text is not a prefix of any suggestion', () => {
        assert.equal(matchPartialAcceptance(items, 'print('), null);
        assert.equal(matchPartialAcceptance(items, ''), null);
    });
});

describe('resolveCommand', () => {
    it('finds an executable on PATH and ignores non-executable files', () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-path-'));
        try {
            const exe = path.join(dir, 'infill');
            fs.writeFileSync(exe, '#!/bin/sh\n');
            fs.chmodSync(exe, 0o755);
            fs.writeFileSync(path.join(dir, 'plain'), '');
            assert.equal(resolveCommand('infill', `/nonexistent${path.delimiter}${dir}`), exe);
            assert.equal(resolveCommand(exe, ''), exe);
            assert.equal(resolveCommand('plain', dir), process.platform === 'win32' ? path.join(dir, 'plain') : null);
            assert.equal(resolveCommand('missing-infill', dir), null);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
