import { type BenchOptions, compare } from './harness.ts';

export default async function (options: BenchOptions): Promise<void> {
  const fn = async () => 42;
  await compare(
    'placeholder',
    [
      { name: 'bare await', run: () => fn() },
      { name: 'sync', run: () => 1 },
    ],
    options,
  );
}
