/**
 * Imported first by each command the packages ship (`conclave`, `conclave-local`): on a Node older
 * than the packages' `engines` (npm only warns about those), the command stops with a message that
 * says what to do, before any module that needs a newer Node is loaded. ES modules are evaluated in
 * import order, so a module imported first runs ahead of the command's other imports.
 */
export const MIN_NODE_MAJOR = 22;

/** The message for a Node `version` (process.version's form) below MIN_NODE_MAJOR; undefined when it is recent enough. */
export function nodeTooOld(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (Number.isFinite(major) && major >= MIN_NODE_MAJOR) return undefined;
  return `Conclave needs Node ${MIN_NODE_MAJOR} or newer, and this is Node ${version}: install Node ${MIN_NODE_MAJOR} (for example \`nvm install ${MIN_NODE_MAJOR}\`), or run the command through it (\`npx -p node@${MIN_NODE_MAJOR} -- <command>\`)`;
}

const tooOld = nodeTooOld(process.version);
if (tooOld) {
  console.error(`error: ${tooOld}`);
  process.exit(1);
}
