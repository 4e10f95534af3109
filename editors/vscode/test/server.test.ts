/**
 * Drives the real `infill serve --stdio` the way the VS Code extension does: initialize with initializationOptions,
 * a settings push through workspace/didChangeConfiguration, didOpen + incremental didChange, inline completion
 * requests, and the acceptance reports.
 *
 * Environment:
 *   INFILL_SERVER_COMMAND  JSON list, the server command (default ["infill", "serve", "--stdio"])
 *   INFILL_TEST_SETTINGS   JSON object, the `infill` settings that make the server complete with a real model, e.g.
 *                          {"completion": {"kind": "local", "model": "/tmp/tiny.gguf", "local": {"binary": "…"}}}
 *                          (tests/e2e/test_vscode_client.py passes the tiny test model and llama-server)
 *   INFILL_TEST_CWD        working directory of the server (default: the current one)
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
    DidChangeConfigurationNotification,
    DidChangeTextDocumentNotification,
    DidOpenTextDocumentNotification,
    ExecuteCommandRequest,
    InitializeRequest,
    InitializeResult,
    InitializedNotification,
    InlineCompletionItem,
    InlineCompletionList,
    InlineCompletionRequest,
    InlineCompletionTriggerKind,
    TextDocumentSyncKind,
} from 'vscode-languageserver-protocol/node';

import { didChangeConfigurationParams, Settings, toServerSettings } from '../src/settings';
import { ServerHarness } from './harness';

const STATUS = 'infill/didChangeStatus';
const STATUS_KINDS = ['starting', 'ready', 'busy', 'error', 'disabled'];
/** Generous bound for the model server to start on a loaded 2-core machine; the test passes as soon as it is ready. */
const READY_MS = 60000;

const serverCommand: string[] = JSON.parse(process.env.INFILL_SERVER_COMMAND ?? '["infill", "serve", "--stdio"]');
const modelSettings: Record<string, unknown> | undefined =
    process.env.INFILL_TEST_SETTINGS ? JSON.parse(process.env.INFILL_TEST_SETTINGS) : undefined;
const skip = modelSettings === undefined
    ? 'INFILL_TEST_SETTINGS is not set (run tests/e2e/test_vscode_client.py, which provides the test model)'
    : false;

/** The `infill` tree VS Code would hold with every contributed setting at its default (dotted keys → tables). */
function contributedDefaults(): Settings {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
    const tree: Settings = {};
    for (const [key, schema] of Object.entries<any>(pkg.contributes.configuration.properties)) {
        const parts = key.split('.').slice(1);
        let node = tree;
        for (const part of parts.slice(0, -1)) {
            node = (node[part] ??= {}) as Settings;
        }
        node[parts[parts.length - 1]] = schema.default;
    }
    return tree;
}

function deepMerge(base: Settings, override: Settings): Settings {
    const out: Settings = { ...base };
    for (const [key, value] of Object.entries(override)) {
        const current = out[key];
        out[key] = typeof value === 'object' && value !== null && !Array.isArray(value) &&
            typeof current === 'object' && current !== null && !Array.isArray(current)
            ? deepMerge(current as Settings, value as Settings)
            : value;
    }
    return out;
}

function items(result: InlineCompletionList | InlineCompletionItem[] | null): InlineCompletionItem[] {
    if (result === null) {
        return [];
    }
    return Array.isArray(result) ? result : result.items;
}

describe('the infill server through vscode-languageserver-protocol', { skip }, () => {
    let server: ServerHarness;
    let init: InitializeResult;
    let stateDir: string;
    const uri = 'file:///tmp/infill-vscode-test/example.py';
    let version = 1;

    before(async () => {
        stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'infill-vscode-'));
        // Keep the user's config file and state directory out of the test.
        const env = {
            ...process.env,
            XDG_CONFIG_HOME: path.join(stateDir, 'config'),
            XDG_STATE_HOME: path.join(stateDir, 'state'),
            XDG_CACHE_HOME: path.join(stateDir, 'cache'),
        };
        server = new ServerHarness(serverCommand, env, process.env.INFILL_TEST_CWD);
        // Start disabled: the settings push below must be what turns completion on. Every contributed setting is
        // sent at its default, as the extension does, so a setting the server does not know fails the test.
        server.settings = toServerSettings(deepMerge(contributedDefaults(), { ...modelSettings, enabled: false }));
        init = await server.connection.sendRequest(InitializeRequest.type, {
            processId: process.pid,
            rootUri: null,
            workspaceFolders: null,
            clientInfo: { name: 'infill-node-test', version: '0.1.0' },
            initializationOptions: server.settings,
            capabilities: {
                general: { positionEncodings: ['utf-16'] },
                window: { workDoneProgress: true, showMessage: {} },
                workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false } },
                textDocument: {
                    synchronization: { dynamicRegistration: false },
                    inlineCompletion: { dynamicRegistration: false },
                },
            },
        });
        await server.connection.sendNotification(InitializedNotification.type, {});
    });

    after(async () => {
        if (server) {
            const code = await server.close();
            assert.equal(code, 0, `the server exited with ${code}; stderr:\n${server.stderr.join('').slice(-4000)}`);
        }
        fs.rmSync(stateDir, { recursive: true, force: true });
    });

    it('advertises inline completion, incremental sync, utf-16 and the acceptance command', () => {
        const caps = init.capabilities;
        assert.ok(caps.inlineCompletionProvider, 'inlineCompletionProvider missing');
        const sync = caps.textDocumentSync;
        const change = typeof sync === 'number' ? sync : sync?.change;
        assert.equal(change, TextDocumentSyncKind.Incremental);
        assert.equal(caps.positionEncoding ?? 'utf-16', 'utf-16');
        assert.ok((caps.executeCommandProvider?.commands ?? []).length > 0, 'no executeCommandProvider commands');
    });

    it('accepts every setting the extension contributes, at its default', async () => {
        await server.waitFor(STATUS, (p) => p.kind === 'disabled', READY_MS);
        const errors = server.received('window/showMessage').filter((p) => p.type <= 2);
        assert.deepEqual(errors, [], 'the server rejected the contributed settings');
    });

    it('reports its status with known kinds and becomes disabled as configured', async () => {
        await server.waitFor(STATUS, (p) => p.kind === 'disabled', READY_MS);
        for (const params of server.received(STATUS)) {
            assert.ok(STATUS_KINDS.includes(params.kind), `unknown status kind ${JSON.stringify(params)}`);
            assert.equal(typeof params.message, 'string');
        }
    });

    it('answers an inline request with no items while disabled', async () => {
        const text = 'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    ';
        await server.connection.sendNotification(DidOpenTextDocumentNotification.type, {
            textDocument: { uri, languageId: 'python', version, text },
        });
        const result = await server.connection.sendRequest(InlineCompletionRequest.type, {
            textDocument: { uri },
            position: { line: 5, character: 4 },
            context: { triggerKind: InlineCompletionTriggerKind.Invoked },
        });
        assert.deepEqual(items(result), []);
    });

    it('rejects an invalid setting by name and keeps running', async () => {
        const from = server.notifications.length;
        await server.connection.sendNotification(DidChangeConfigurationNotification.type,
            didChangeConfigurationParams({ ...modelSettings, enabled: false, multiline: 'sometimes' }));
        const shown = await server.waitFor('window/showMessage', (p) => /multiline/.test(p.message), 10000, from);
        assert.ok(shown.type <= 2, `an invalid setting should be an error or warning, got ${JSON.stringify(shown)}`);
    });

    it('turns on through didChangeConfiguration and completes after an incremental change', async () => {
        const from = server.notifications.length;
        server.settings = { ...server.settings, enabled: true, maxTokens: 16 };
        await server.connection.sendNotification(DidChangeConfigurationNotification.type,
            didChangeConfigurationParams(server.settings));
        await server.waitFor(STATUS, (p) => p.kind === 'ready', READY_MS, from);
        const kinds = server.notifications.slice(from).filter((n) => n.method === STATUS).map((n) => n.params.kind);
        assert.ok(kinds.lastIndexOf('starting') < kinds.lastIndexOf('ready'),
            `the model should be starting before it is ready: ${kinds}`);
        assert.equal(server.received('window/showMessage').filter((p) => p.type === 1 &&
            !/multiline/.test(p.message)).length, 0, 'unexpected error messages');

        version += 1;
        await server.connection.sendNotification(DidChangeTextDocumentNotification.type, {
            textDocument: { uri, version },
            contentChanges: [{ range: { start: { line: 5, character: 4 }, end: { line: 5, character: 4 } }, text: 'return' }],
        });
        const position = { line: 5, character: 10 };
        const result = await server.connection.sendRequest(InlineCompletionRequest.type, {
            textDocument: { uri },
            position,
            context: { triggerKind: InlineCompletionTriggerKind.Invoked },
        });
        const list = items(result);
        assert.ok(list.length > 0, `no inline items; stderr:\n${server.stderr.join('').slice(-2000)}`);
        const commands = init.capabilities.executeCommandProvider?.commands ?? [];
        for (const item of list) {
            const insertText = typeof item.insertText === 'string' ? item.insertText : item.insertText.value;
            assert.ok(insertText.trim().length > 0, `blank item ${JSON.stringify(item)}`);
            if (item.range) {
                assert.ok(item.range.start.line <= position.line && item.range.end.line >= position.line,
                    `the item's range ${JSON.stringify(item.range)} does not contain the cursor`);
            }
            assert.ok(item.command, `item without an acceptance command: ${JSON.stringify(item)}`);
            assert.ok(commands.includes(item.command.command),
                `item command ${item.command.command} is not among the advertised commands ${commands}`);
        }

        // What VS Code does when the suggestion is shown, partly accepted, then accepted.
        const first = list[0];
        const firstText = typeof first.insertText === 'string' ? first.insertText : first.insertText.value;
        await server.connection.sendNotification('textDocument/didShowCompletion', { item: first });
        await server.connection.sendNotification('textDocument/didPartiallyAcceptCompletion',
            { item: first, acceptedLength: Math.min(2, firstText.length) });
        await server.connection.sendRequest(ExecuteCommandRequest.type,
            { command: first.command!.command, arguments: first.command!.arguments });
        // The server is still healthy after the reports: a second request is answered.
        const again = await server.connection.sendRequest(InlineCompletionRequest.type, {
            textDocument: { uri },
            position,
            context: { triggerKind: InlineCompletionTriggerKind.Automatic },
        });
        assert.ok(Array.isArray(again) || Array.isArray(again?.items), 'the second request got no list');
    });
});
