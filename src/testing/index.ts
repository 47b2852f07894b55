export { describeInstanceRegistryConformance } from '../ledger/instance-registry-conformance.ts';
export { describeRunLedgerConformance } from '../ledger/run-ledger-conformance.ts';
export type {
  ConformanceAssertion,
  ConformanceFactory,
  ConformanceTestContext,
  ConformanceTestFunctions,
} from './conformance-namespace.ts';
export { FakeTimeProvider } from './fake-time-provider.ts';
export { describeLockStoreConformance, type LockStoreConformanceOptions } from './lock-store-conformance.ts';
