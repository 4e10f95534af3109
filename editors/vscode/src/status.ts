/**
 * The status bar item's look, as a pure function of the server's last `infill/didChangeStatus` notification, so that
 * the mapping is testable without VS Code.
 */

export const STATUS_KINDS = ['starting', 'ready', 'busy', 'error', 'disabled'] as const;
export type StatusKind = (typeof STATUS_KINDS)[number];

/** The params of `infill/didChangeStatus`. `percent` is sent while a model loads, when the server knows it. */
export interface ServerStatus {
    kind: StatusKind;
    message: string;
    detail?: string | null;
    percent?: number | null;
}

export interface StatusView {
    text: string;
    tooltip: string;
    /** The accessible label: what the icon means, in words, with the server's message. */
    label: string;
    /** Drives the item's background: errors must stand out, everything else stays quiet. */
    severity: 'normal' | 'warning' | 'error';
}

const ICONS: Record<StatusKind, string> = {
    starting: '$(loading~spin)',
    ready: '$(check)',
    busy: '$(sync~spin)',
    error: '$(error)',
    disabled: '$(circle-slash)',
};

/** Validates a notification's params; an unknown shape becomes an error status rather than a silent no-op. */
export function parseStatus(params: unknown): ServerStatus {
    if (typeof params !== 'object' || params === null) {
        return { kind: 'error', message: `infill/didChangeStatus: expected an object, got ${JSON.stringify(params)}` };
    }
    const p = params as Record<string, unknown>;
    const kind = STATUS_KINDS.find((k) => k === p.kind);
    if (kind === undefined) {
        return { kind: 'error', message: `infill/didChangeStatus: unknown kind ${JSON.stringify(p.kind)}` };
    }
    const status: ServerStatus = { kind, message: typeof p.message === 'string' ? p.message : '' };
    if (typeof p.detail === 'string') {
        status.detail = p.detail;
    }
    if (typeof p.percent === 'number' && Number.isFinite(p.percent)) {
        status.percent = Math.max(0, Math.min(100, Math.round(p.percent)));
    }
    return status;
}

export function statusView(status: ServerStatus): StatusView {
    let text = `${ICONS[status.kind]} Infill`;
    if (status.kind === 'starting' && status.percent !== undefined && status.percent !== null) {
        text += ` ${status.percent}%`;
    }
    const lines = [status.message || `Infill: ${status.kind}`];
    if (status.detail) {
        lines.push(status.detail);
    }
    lines.push('Click for Infill commands');
    const severity = status.kind === 'error' ? 'error' : status.kind === 'disabled' ? 'warning' : 'normal';
    const label = `Infill ${status.kind}: ${status.message || status.kind}`;
    return { text, tooltip: lines.join('\n\n'), label, severity };
}

/** Shown before the server has said anything and after the server is stopped (disabling completions shows the
 * server's own `disabled` status instead). */
export const NOT_RUNNING: ServerStatus = { kind: 'disabled', message: 'Infill is not running' };
