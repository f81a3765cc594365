/**
 * The relay's config file, re-read while it runs: on every change of the file (editors that
 * replace it included) and on SIGHUP. An edit that validates is applied — the hosts at once, any
 * other section at the next restart (said so); one that does not is refused with its error (file,
 * key, what was expected) and the running config stays.
 */
import { existsSync, type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { isPtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import type { RelayConfig } from './config.js';
import type { HostsChange } from './host-router.js';

/** Changes of the file within this long are read once. */
const SETTLE_MS = 200;

/** The config sections that apply only at a restart (the hosts apply at once). */
const RESTART_SECTIONS = [
  'listen',
  'limits',
  'flowControl',
  'allowedOrigins',
  'agents',
  'input',
  'terminal',
  'tls',
  'history',
] as const;

export type ReloadOutcome =
  | { applied: true; hosts: HostsChange; restartNeeded: string[]; lspChanged?: boolean }
  | { applied: false; code: string; message: string };

export interface ConfigWatchOptions {
  /** The file to watch (it may not exist yet: its directory is watched). */
  file: string;
  /** Reads and validates the file (throws a PtyRelayError when it does not validate). */
  load: () => RelayConfig;
  /** The config running now. */
  running: RelayConfig;
  /** Applies a validated config's hosts. */
  applyHosts: (hosts: RelayConfig['hosts']) => Promise<HostsChange>;
  /** Applies a validated config's code navigation (it travels with every query: at once). */
  applyLsp?: (lsp: RelayConfig['lsp']) => void;
  log: Logger;
  /** Each reload's outcome, for people (the CLI prints it). */
  onOutcome?: (o: ReloadOutcome) => void;
}

export class ConfigWatch {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: RelayConfig;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly onHup = () => void this.reload();

  constructor(private readonly opts: ConfigWatchOptions) {
    this.running = opts.running;
    const dir = dirname(opts.file);
    if (existsSync(dir)) {
      this.watcher = watch(dir, (_event, name) => {
        if (name !== null && name !== basename(opts.file)) return;
        clearTimeout(this.timer);
        this.timer = setTimeout(() => void this.reload(), SETTLE_MS);
      });
      this.watcher.on('error', (err) => opts.log.warn({ err: err.message, dir }, 'config watch stopped'));
    } else opts.log.info({ dir }, 'config directory does not exist: reload with SIGHUP once it does');
    process.on('SIGHUP', this.onHup);
  }

  /** Reads the file again and applies it (reloads run one after another). */
  reload(): Promise<ReloadOutcome> {
    const next = this.chain.then(() => this.reloadNow());
    this.chain = next.catch(() => {});
    return next;
  }

  private async reloadNow(): Promise<ReloadOutcome> {
    const { log, file } = this.opts;
    let config: RelayConfig;
    try {
      config = this.opts.load();
    } catch (err) {
      const code = isPtyRelayError(err) ? err.code : 'CONFIG_INVALID';
      const message = err instanceof Error ? err.message : String(err);
      log.error({ file, code, err: message }, 'config edit refused; the running config stays');
      return this.report({ applied: false, code, message });
    }
    const restartNeeded = RESTART_SECTIONS.filter(
      (k) => JSON.stringify(config[k]) !== JSON.stringify(this.running[k]),
    );
    let hosts: HostsChange;
    try {
      hosts = await this.opts.applyHosts(config.hosts);
    } catch (err) {
      const code = isPtyRelayError(err) ? err.code : 'CONFIG_INVALID';
      const message = err instanceof Error ? err.message : String(err);
      log.error({ file, code, err: message }, 'config hosts not applied; the running config stays');
      return this.report({ applied: false, code, message });
    }
    const lspChanged = JSON.stringify(config.lsp) !== JSON.stringify(this.running.lsp);
    if (lspChanged) this.opts.applyLsp?.(config.lsp);
    this.running = { ...this.running, hosts: config.hosts, lsp: config.lsp };
    log.info({ file, ...hosts, restartNeeded, lspChanged }, 'config reloaded');
    return this.report({ applied: true, hosts, restartNeeded, ...(lspChanged ? { lspChanged } : {}) });
  }

  private report(o: ReloadOutcome): ReloadOutcome {
    this.opts.onOutcome?.(o);
    return o;
  }

  close(): void {
    clearTimeout(this.timer);
    this.watcher?.close();
    process.off('SIGHUP', this.onHup);
  }
}

/** One line for people about a reload. */
export function describeReload(o: ReloadOutcome): string {
  if (!o.applied) return `config edit refused (${o.code}): ${o.message}; the running config stays`;
  const parts = [
    ...(o.hosts.added.length ? [`added ${o.hosts.added.join(', ')}`] : []),
    ...(o.hosts.removed.length ? [`removed ${o.hosts.removed.join(', ')}`] : []),
    ...(o.hosts.changed.length ? [`changed ${o.hosts.changed.join(', ')}`] : []),
  ];
  const hosts = `${parts.length ? `hosts: ${parts.join('; ')}` : 'hosts unchanged'}${o.lspChanged ? '; lsp applied' : ''}`;
  const later = o.restartNeeded.length
    ? `; ${o.restartNeeded.join(', ')} changed: applies at the next restart`
    : '';
  return `config reloaded: ${hosts}${later}`;
}
