export { type OpenTelemetryListener, type OpenTelemetryOptions, openTelemetry } from './open-telemetry.ts';
