// The command-line conventions of every MPSurf command, as native-host/cli keeps them for the Go ones: -h or --help
// prints the usage on stdout and exits 0; an unknown flag or a bad value is one line on stderr and exit status 2.
import { parseArgs } from 'node:util';

// commandLine parses argv with node:util's parseArgs options (plus -h/--help) and returns the values, or ends the
// process as the conventions say.
export function commandLine(name, usage, options = {}, argv = process.argv.slice(2)) {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } } }));
  } catch (err) {
    process.stderr.write(`${name}: ${String(err.message).replace(/\s*\n\s*/g, ' ')} (${name} --help shows usage)\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  return values;
}
