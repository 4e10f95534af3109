/**
 * What the extension sends to the server as its settings.
 *
 * VS Code keeps every `infill.*` setting in one tree; a few of them only concern the extension itself (how to start
 * the server, message tracing). The server validates what it receives and rejects unknown keys, naming them,
 * so those client-only keys are removed here, and so are unset values: the server then applies its own defaults
 * instead of receiving `null` for a setting that has no `null` in its type.
 */

/** Top-level keys under `infill` that configure the extension, never the server. */
export const CLIENT_ONLY_KEYS: readonly string[] = ['server', 'trace', 'editor'];

export type Settings = { [key: string]: unknown };

function isPlainObject(value: unknown): value is Settings {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Drops `null`/`undefined` values and tables left empty by that, recursively. Lists are kept as they are. */
export function pruneUnset(value: Settings): Settings {
    const out: Settings = {};
    for (const [key, item] of Object.entries(value)) {
        if (item === null || item === undefined) {
            continue;
        }
        if (isPlainObject(item)) {
            const inner = pruneUnset(item);
            if (Object.keys(inner).length > 0) {
                out[key] = inner;
            }
            continue;
        }
        out[key] = item;
    }
    return out;
}

/** The server's view of the `infill` settings tree (`workspace.getConfiguration('infill')` as a plain object). */
export function toServerSettings(raw: unknown): Settings {
    if (!isPlainObject(raw)) {
        return {};
    }
    const copy: Settings = {};
    for (const [key, value] of Object.entries(raw)) {
        if (!CLIENT_ONLY_KEYS.includes(key) && typeof value !== 'function') {
            copy[key] = value;
        }
    }
    return pruneUnset(JSON.parse(JSON.stringify(copy)) as Settings);
}

/** The `workspace/didChangeConfiguration` payload: `{settings: {infill: {...}}}`, the shape the server reads. */
export function didChangeConfigurationParams(raw: unknown): { settings: { infill: Settings } } {
    return { settings: { infill: toServerSettings(raw) } };
}
