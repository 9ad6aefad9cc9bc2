// Package cli holds the command-line conventions every MPSurf command follows, so that they hold everywhere:
// -h, -help or --help prints the command's usage on stdout and exits 0; an unknown flag, a bad value or a missing
// argument is one line on stderr and exit status 2 (the Go flag package's statuses, without its multi-line dump of
// defaults, which our hand-written usage texts replace).
//
// A command with subcommands checks WantsHelp before it dispatches, so that a subcommand without flags answers
// --help too; each parses its flags with Flags and Parse or ParseMixed and reports with Exit.
package cli
