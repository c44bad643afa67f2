export * from './candidate.js';
export * from './common.js';
export * from './config.js';
export * from './identity.js';
export * from './lease.js';
export * from './strategy.js';
export * from './validation.js';
export * from './version.js';
