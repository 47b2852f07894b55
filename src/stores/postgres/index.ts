export {
  isStaleTokenError,
  isStoreSetupError,
  isStoreUnavailableError,
  StaleTokenError,
  StoreSetupError,
  StoreUnavailableError,
} from '../../strategies/lock/errors.ts';
export { postgresLockStoreDefaults } from './defaults.ts';
export {
  fenceTransaction,
  isTransactionAbortedError,
  TransactionAbortedError,
  withFencedTransaction,
} from './fencing.ts';
export type { PostgresLockStoreOptions, PostgresTableOptions } from './options.ts';
export { postgresLockStoreSql } from './schema.ts';
export { PostgresLockStore } from './store.ts';
