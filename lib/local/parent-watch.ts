/**
 * Local mode's watch of the process that started it: lib/util/parent-watch.ts, where the CLI's
 * long-running commands find it too (the CLI's package ships nothing of lib/local/).
 */
export { PARENT_CHECK_MS, outputUnread, parentOf, starterOf, watchParent, type ParentWatchClock } from '../util/parent-watch.js';
