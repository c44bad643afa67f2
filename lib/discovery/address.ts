/**
 * A leader's advertised address (its elector's `advertise` option, the lease's `holderAddress`, the
 * events' `address`) as a naming service needs it: the host, which kind of host, and the port.
 * Pure.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { hasCredentials, isUnsetVariableHost, isWildcardHost } from '../schemas/lease.js';
import { dnsNameIssue } from './wiring.js';

/** An address a name can point at. */
export interface LeaderAddress {
  /** As the leader advertised it: a URL or host:port. */
  readonly raw: string;
  /** The host, without the brackets of an IPv6 literal. */
  readonly host: string;
  readonly kind: 'ipv4' | 'ipv6' | 'hostname';
  /** The port: given, or the scheme's own (http 80, https 443, ws 80, wss 443). Undefined: none said. */
  readonly port?: number;
}

const SCHEME_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'ws:': 80, 'wss:': 443 };

/**
 * `raw` as a LeaderAddress, or why a name cannot point at it. Takes a URL (`http://10.0.0.7:8080/`,
 * `https://leader.internal`), host:port (`10.0.0.7:8080`, `[fd00::7]:8080`, `worker-3.internal:8080`)
 * or a bare host (an IPv6 literal without brackets included).
 */
export function parseAddress(raw: string): LeaderAddress | { readonly issue: string } {
  // advertise refuses it now; a worker of 0.1.0 took it. Not quoted: the reason is logged
  if (hasCredentials(raw)) return { issue: 'its URL carries credentials (user:password@ before the host), which a name would publish' };
  let host: string;
  let port: string | undefined;
  let schemePort: number | undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { issue: `"${raw}" is not a URL` };
    }
    host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    port = url.port || undefined;
    schemePort = SCHEME_PORTS[url.protocol];
  } else {
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(raw);
    const hostPort = /^([^:]+):(\d+)$/.exec(raw);
    if (bracketed) [host, port] = [bracketed[1]!, bracketed[2]];
    else if (hostPort) [host, port] = [hostPort[1]!, hostPort[2]];
    else host = raw; // a bare host: a name, an IPv4 address, or an IPv6 address with its colons
  }
  if (port !== undefined && !(/^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65_535)) return { issue: `"${raw}" has the port ${port}, not 1 to 65535` };
  const portOf = port !== undefined ? Number(port) : schemePort;
  const kind = isIPv4(host) ? 'ipv4' : isIPv6(host) ? 'ipv6' : 'hostname';
  // advertise refuses both now; a worker of 0.1.0 took them
  if (isWildcardHost(host)) return { issue: `"${raw}" is the wildcard address, where a server listens, not where a client reaches it` };
  if (isUnsetVariableHost(host)) return { issue: `"${raw}": its host is an unset variable written into a template` };
  // advertise takes it (local mode's workers are reached on 127.0.0.1), but a name pointed at it sends each client to itself
  if (isLoopbackHost(host)) return { issue: `"${raw}" is a loopback address, which each client dials as its own host, not the leader's` };
  if (kind === 'hostname') {
    const issue = host === '' ? 'is empty' : dnsNameIssue(host.replace(/\.$/, ''));
    if (issue) return { issue: `"${raw}": its host ${issue}` };
  }
  return { raw, host: kind === 'hostname' ? host.replace(/\.$/, '').toLowerCase() : host, kind, ...(portOf !== undefined ? { port: portOf } : {}) };
}

/**
 * Whether `host` (no brackets) is a loopback address: 127.0.0.0/8 (in any spelling an http URL
 * reads, and mapped into IPv6), ::1, or `localhost` and names under it (RFC 6761).
 */
function isLoopbackHost(host: string): boolean {
  // read as an http URL's host, as isWildcardHost does: 127.1 and 0x7f.1 are 127.0.0.1, [::0:1] is [::1]
  const asHttp = `http://${host.includes(':') ? `[${host}]` : host}`;
  const plain = (URL.canParse(asHttp) ? new URL(asHttp).hostname : host).toLowerCase().replace(/\.$/, '');
  return /^127\.\d+\.\d+\.\d+$/.test(plain) || plain === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(plain) || plain === 'localhost' || plain.endsWith('.localhost');
}
