/**
 * A private test network of network namespaces ("hosts") for multi-host fault tests: two bridges in
 * the root namespace, an application net (10.231.N.0/24) and a database net (10.232.N.0/24), and per
 * host a namespace with one veth pair into each, so a host can be cut off from the database alone
 * (its database veth down) while it still answers on the application net. Names carry a random
 * suffix and the third octet is one no interface on the machine uses, so parallel runs do not meet.
 * Only the addresses made here are ever used.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

const ip = (...args: string[]) => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** Why namespaces cannot be made here, or null when they can. */
export function netnsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'not root: network namespaces need CAP_NET_ADMIN';
  if (spawnSync('ip', ['-V']).status !== 0) return 'no `ip` command (iproute2)';
  const probe = `ctprobe${randomBytes(3).toString('hex')}`;
  const made = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (made.status !== 0) return `ip netns add failed: ${made.stderr.trim()}`;
  spawnSync('ip', ['netns', 'del', probe]);
  return null;
}

export interface Host {
  name: string;
  ns: string;
  /** Its address on the application net. */
  appIp: string;
  /** The root-side end of its database veth: down cuts it off from the database. */
  dbVeth: string;
}

export class TestNet {
  readonly hosts = new Map<string, Host>();
  readonly appIp: string;
  readonly dbIp: string;
  private readonly links: string[] = [];

  private constructor(
    readonly suffix: string,
    readonly octet: number,
  ) {
    this.appIp = `10.231.${octet}.1`;
    this.dbIp = `10.232.${octet}.1`;
  }

  /** The two bridges, up, with the root namespace's addresses (where PostgreSQL, Redis and the test listen). */
  static create(): TestNet {
    const used = ip('-4', '-o', 'addr');
    const free = Array.from({ length: 200 }, (_, i) => 20 + i).filter((o) => !used.includes(`10.231.${o}.`) && !used.includes(`10.232.${o}.`));
    const octet = free[Math.floor(Math.random() * free.length)];
    if (octet === undefined) throw new Error('no free 10.231.N.0/24 test subnet');
    const net = new TestNet(randomBytes(3).toString('hex'), octet);
    try {
      for (const [br, addr] of [[net.bridge('a'), net.appIp], [net.bridge('d'), net.dbIp]] as const) {
        ip('link', 'add', br, 'type', 'bridge');
        net.links.push(br);
        ip('addr', 'add', `${addr}/24`, 'dev', br);
        ip('link', 'set', br, 'up');
      }
    } catch (err) {
      net.destroy();
      throw err;
    }
    return net;
  }

  private bridge(kind: 'a' | 'd') {
    return `ctb${kind}${this.suffix}`;
  }

  /** A namespace with a leg on each net; `name` becomes part of the namespace's name. */
  addHost(name: string): Host {
    const i = this.hosts.size + 10;
    const ns = `ct-${this.suffix}-${name}`;
    ip('netns', 'add', ns);
    const host: Host = { name, ns, appIp: `10.231.${this.octet}.${i}`, dbVeth: `ctd${this.suffix}${i}` };
    this.hosts.set(name, host);
    ip('-n', ns, 'link', 'set', 'lo', 'up');
    for (const kind of ['a', 'd'] as const) {
      const outer = `ct${kind}${this.suffix}${i}`;
      const inner = `ci${kind}${this.suffix}${i}`;
      ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
      this.links.push(outer);
      ip('link', 'set', inner, 'netns', ns);
      ip('link', 'set', outer, 'master', this.bridge(kind));
      ip('link', 'set', outer, 'up');
      ip('-n', ns, 'addr', 'add', `10.23${kind === 'a' ? 1 : 2}.${this.octet}.${i}/24`, 'dev', inner);
      ip('-n', ns, 'link', 'set', inner, 'up');
    }
    return host;
  }

  /** `ip netns exec <ns>`: the prefix that runs a command on the host. */
  exec(host: Host): string[] {
    return ['ip', 'netns', 'exec', host.ns];
  }

  /** The ids of every process in the host's namespace. */
  pids(host: Host): number[] {
    return ip('netns', 'pids', host.ns).split(/\s+/).filter(Boolean).map(Number);
  }

  /** kill -9 of every process in the host's namespace: the host is gone. */
  killAll(host: Host): number[] {
    const pids = this.pids(host);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    return pids;
  }

  setLink(veth: string, up: boolean) {
    ip('link', 'set', veth, up ? 'up' : 'down');
  }

  /** Kills what still runs in the namespaces, deletes them and the links; never throws (afterAll). */
  destroy() {
    for (const host of this.hosts.values()) {
      try {
        this.killAll(host);
      } catch {
        // The namespace may not exist.
      }
      spawnSync('ip', ['netns', 'del', host.ns]);
    }
    for (const link of this.links) spawnSync('ip', ['link', 'del', link]);
  }
}
