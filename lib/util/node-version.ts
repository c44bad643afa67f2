/**
 * Imported first by each command the packages ship (`conclave`, `conclave-local`): on a Node older
 * than the packages' `engines` (npm only warns about those), the command stops with a message that
 * says what to do, before any module that needs a newer Node is loaded. ES modules are evaluated in
 * import order, so a module imported first runs ahead of the command's other imports.
 */
import { nodeTooOld } from './node-support.js';

export { MIN_NODE_MAJOR, nodeTooOld } from './node-support.js';

const tooOld = nodeTooOld(process.version);
if (tooOld) {
  console.error(`error: ${tooOld}`);
  process.exit(1);
}
