export { FakeTimeProvider } from './fake-time-provider.ts';
