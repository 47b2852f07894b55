export {
  isStaleTokenError,
  isStoreSetupError,
  isStoreUnavailableError,
  StaleTokenError,
  StoreSetupError,
  StoreUnavailableError,
} from '../../strategies/lock/errors.ts';
export { mysqlLockStoreDefaults } from './defaults.ts';
export { isTransactionAbortedError, TransactionAbortedError, withFencedTransaction } from './fencing.ts';
export type { MysqlLockStoreOptions, MysqlTableOptions } from './options.ts';
export { mysqlLockStoreSql } from './schema.ts';
export { MysqlLockStore } from './store.ts';
