export type {
  ConformanceAssertion,
  ConformanceFactory,
  ConformanceTestContext,
  ConformanceTestFunctions,
} from './conformance-namespace.ts';
export { FakeTimeProvider } from './fake-time-provider.ts';
export { describeInstanceRegistryConformance } from './instance-registry-conformance.ts';
export { describeLockStoreConformance, type LockStoreConformanceOptions } from './lock-store-conformance.ts';
export { describeRunLedgerConformance } from './run-ledger-conformance.ts';
