/**
 * Which Node the packages support (their `engines`, which npm only warns about): the commands stop
 * on an older one (./node-version.ts), the SDK says so once with a process warning (sdk/index.ts).
 */
export const MIN_NODE_MAJOR = 22;

/** The message for a Node `version` (process.version's form) below MIN_NODE_MAJOR; undefined when it is recent enough. */
export function nodeTooOld(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (Number.isFinite(major) && major >= MIN_NODE_MAJOR) return undefined;
  return `Conclave needs Node ${MIN_NODE_MAJOR} or newer, and this is Node ${version}: install Node ${MIN_NODE_MAJOR} (for example \`nvm install ${MIN_NODE_MAJOR}\`), or run the command through it (\`npx -p node@${MIN_NODE_MAJOR} -- <command>\`)`;
}

/** The SDK's process warning's code, on a Node older than MIN_NODE_MAJOR. */
export const NODE_TOO_OLD_CODE = 'CONCLAVE_NODE_VERSION';

/**
 * A library does not stop the process that imports it: on a Node older than MIN_NODE_MAJOR it says
 * once, as a process warning, that it is not supported there and how to run a supported one.
 */
export function warnOnOldNode(version = process.version): void {
  const tooOld = nodeTooOld(version);
  const said = Symbol.for('conclave.nodeTooOldSaid');
  if (tooOld === undefined || (globalThis as Record<symbol, unknown>)[said]) return;
  (globalThis as Record<symbol, unknown>)[said] = true;
  process.emitWarning(`${tooOld}; it is not supported on this Node, and may fail where it uses what Node ${MIN_NODE_MAJOR} added`, { code: NODE_TOO_OLD_CODE });
}
