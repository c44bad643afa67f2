/**
 * DynamoDB Local has no bind option: its Jetty listens on every interface, so anyone who reaches
 * this machine could read and write its tables with the published `local` credentials. On Linux
 * Java runs in a network namespace of its own, which holds nothing but its own loopback. This
 * process listens on 127.0.0.1 and hands that listening socket to a relay inside the namespace,
 * which pipes each connection it accepts to Java (systemd's PrivateNetwork= with socket activation,
 * done by hand). A socket belongs to the namespace it was made in, so the port stays on this
 * machine's loopback, and Java's own port exists only in the namespace.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:net';

/** Java's port inside its namespace: nothing else lives there. */
export const INNER_PORT = 8000;

export type NamespaceSupport = { ok: true; unshare: string[] } | { ok: false; why: string };

let support: NamespaceSupport | undefined;

/**
 * Whether a network namespace can be made here, and `unshare`'s flags for it: a user namespace
 * of its own (no privilege needed where the kernel allows unprivileged user namespaces), or, as
 * root where it doesn't, the network namespace alone. Asked once per process (one `unshare`, a few ms).
 */
export function namespaceSupport(): NamespaceSupport {
  if (support) return support;
  if (process.platform !== 'linux') return (support = { ok: false, why: `network namespaces are Linux's, and this is ${process.platform}` });
  const tries = [['--user', '--map-root-user', '--net']];
  if (process.getuid?.() === 0) tries.push(['--net']);
  let why = '';
  for (const flags of tries) {
    // the namespace's loopback starts down; Java is reached through it
    const r = spawnSync('unshare', [...flags, 'ip', 'link', 'set', 'lo', 'up'], { encoding: 'utf8' });
    if (r.status === 0) return (support = { ok: true, unshare: flags });
    why =
      (r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
        ? 'there is no `unshare` (util-linux) on PATH'
        : `\`unshare ${flags.join(' ')} ip link set lo up\` failed: ${(r.stderr || String(r.error)).trim()}`;
  }
  return (support = { ok: false, why });
}

/**
 * Java's keeper (`node -e`, so it needs no file and no loader): starts Java with the arguments it
 * is given, tells the parent Java's pid, and how Java exited before it exits itself (the parent
 * stops a Java whose keeper died without telling), stops Java when the parent goes or disconnects (its IPC
 * channel closes however the parent ends, SIGKILL included), and, in a namespace, pipes each
 * connection of the listening socket the parent sends to Java's port.
 */
export const RELAY = `
const { spawn } = require('node:child_process');
const { connect } = require('node:net');
const [port, javaPath, ...args] = process.argv.slice(1);
// the parent gone already (killed during its start-up, a Ctrl-C before its handlers): no Java
if (!process.connected) process.exit(1);
const java = spawn(javaPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
// the parent gone (its IPC channel closed, however it ended: SIGKILL included), or a message to it
// failing (EPIPE: it died before reading one): Java stops, and the keeper after it. Set before the
// first send, which used to crash the keeper on EPIPE and leave Java running for good.
const parentGone = () => java.kill('SIGTERM');
process.on('disconnect', parentGone);
process.on('error', parentGone);
java.on('error', (e) => { console.error(String(e)); process.exit(1); });
// how Java exited, told to the parent before the keeper follows it (the keeper's own code can
// only say 1 for a signal: an out-of-memory kill looked like a crash)
java.on('exit', (code, sig) => {
  const how = sig ? 'killed by ' + sig : 'with code ' + code;
  const exit = () => process.exit(code ?? 1);
  try { process.send({ javaExit: how }, exit); } catch { exit(); }
});
if (java.pid !== undefined) process.send({ javaPid: java.pid }, (e) => { if (e) parentGone(); });
process.on('message', (_m, front) => {
  front.on('error', (e) => console.error('conclave relay: ' + String(e)));
  front.on('connection', (c) => {
    const j = connect(Number(port), '127.0.0.1');
    c.setNoDelay(true);
    j.setNoDelay(true);
    c.on('error', () => j.destroy());
    j.on('error', () => c.destroy());
    c.pipe(j).pipe(c);
  });
});
`;

export interface KeptJava {
  /** Java's keeper (in a namespace: unshare, then the keeper, the same process). Its stderr carries Java's. */
  readonly relay: ChildProcess;
  /** Java's pid (in this machine's pid namespace), once the keeper has started it. */
  readonly javaPid: Promise<number>;
}

/**
 * Starts `java javaArgs` (`java`: the executable's path, lib/local/java.ts; the arguments must make
 * it listen on INNER_PORT) in a network namespace, reached through `front`, a server listening on
 * this machine's loopback. `front` is closed here once the relay holds it, so every connection to
 * its port goes to Java. `relay.disconnect()` stops Java.
 */
export function startInNamespace(flags: string[], java: string, javaArgs: string[], front: Server): KeptJava {
  const kept = keep('unshare', [...flags, 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, '-e', RELAY, String(INNER_PORT), java, ...javaArgs]);
  kept.relay.send('front', front, () => front.close());
  return kept;
}

/** Starts `java javaArgs` (`java`: the executable's path) under its keeper, in this machine's network: Java listens where its arguments say. */
export function startKept(java: string, javaArgs: string[]): KeptJava {
  return keep(process.execPath, ['-e', RELAY, String(INNER_PORT), java, ...javaArgs]);
}

/**
 * The keeper starts in a session of its own (`detached`), and Java in it: a terminal's Ctrl-C,
 * sent to its whole foreground process group, reaches this process alone, which then stops in
 * order (a local runtime deletes its lock while DynamoDB Local still answers) and stops Java last.
 */
function keep(command: string, args: string[]): KeptJava {
  const relay = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], detached: true });
  const javaPid = new Promise<number>((resolve, reject) => {
    relay.once('message', (m: { javaPid: number }) => resolve(m.javaPid));
    // 'close', not 'exit': by then its stderr (the caller's message) has been read
    relay.once('close', (code) => reject(new Error(`DynamoDB Local's keeper exited with code ${code} before starting Java`)));
  });
  javaPid.catch(() => undefined); // the caller sees the exit itself, with Java's stderr
  return { relay, javaPid };
}
