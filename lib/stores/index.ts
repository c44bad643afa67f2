export * from './candidate-store.js';
export * from './errors.js';
export * from './identity-store.js';
export * from './item-store.js';
export * from './lease-store.js';
