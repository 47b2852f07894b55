#!/usr/bin/env node
// The parent as this process starts, before the CLI's modules load: a launcher (npm) stopped in
// the meantime is still noticed (see src/cli/launcher.ts).
const launchedBy = process.ppid;
const { main } = await import('../dist/cli/main.js');

await main(process.argv, { launchedBy });
