// Command ferryctl is ferry's command-line client: every operation of the control plane and the data plane as
// `ferryctl <noun> <verb>`, on the generated Go SDK (openapi/sdk).
//
//	ferryctl compartment   create|get|list|update|delete
//	ferryctl queue         create|get|list|update|delete|purge|move|stats|channels|consumers
//	ferryctl consumer-group create|get|list|update|delete
//	ferryctl consumer      leave
//	ferryctl message       put|get|delete|update|watch
//	ferryctl dlq           get|redrive
//	ferryctl policy        create|get|list|update|delete|simulate
//	ferryctl filter        validate
//	ferryctl work-request  get|list|errors|logs
//	ferryctl config        set-profile|use-profile|list-profiles|delete-profile
//	ferryctl completion    bash|zsh|fish|powershell
//
// The endpoint and token come from --endpoint/--token, else FERRY_ENDPOINT/FERRY_TOKEN, else a profile of
// $XDG_CONFIG_HOME/ferry/config (~/.config/ferry/config). Output is the API's JSON (default), -o yaml or
// -o table. Exit status: 0 success, 1 the call failed (an API error, an unreachable server, a failed work
// request), 2 the command line or the configuration is wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

// Exit statuses, which scripts rely on.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed: an API error, a network error, a failed work request
	exitUsage   = 2 // the command line or the configuration is wrong: nothing was sent
)

func main() {
	// SIGPIPE is handled so that a write to a closed stdout (ferryctl message watch | head) returns an error
	// the command handles (a watch releases what it did not write) instead of killing the process.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// app is one invocation: its streams, its global flags and, once a command runs, its API client.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	endpoint, token, profile string
	output, query            string
	waitTimeout              time.Duration

	// running is set once a command's RunE starts: cobra's own errors before that (unknown flags, missing
	// arguments or required flags) are usage errors; errors after it are failures unless they are usageErrors.
	running bool
	client  *sdk.ClientWithResponses
	conf    settings
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	return a.report(cmd, err)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ferryctl",
		Short: "ferryctl is the command-line client of ferry's queue API",
		Long: `ferryctl is the command-line client of ferry's queue API: every operation of both planes as
"ferryctl <noun> <verb>", with flags named after the API's fields.

Configuration: --endpoint and --token, else FERRY_ENDPOINT and FERRY_TOKEN, else a profile of
$XDG_CONFIG_HOME/ferry/config (~/.config/ferry/config; --profile NAME or FERRY_PROFILE chooses one, else
the default profile). The endpoint defaults to http://127.0.0.1:8080. Where --compartment-id is optional
it defaults to the token's tenancy (the root compartment).

Output: the API's JSON (default), -o yaml, or -o table; --query PATH prints one field (id,
messages[].receipt). Exit status: 0 success, 1 the call failed, 2 a usage or configuration error.`,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch a.output {
			case "json", "yaml", "table":
			default:
				return usagef("-o/--output must be json, yaml or table, not %q", a.output)
			}
			if a.query != "" && a.output == "table" {
				return usagef("--query prints a value: it does not combine with -o table")
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.endpoint, "endpoint", "", "ferry's base URL (env FERRY_ENDPOINT; default http://127.0.0.1:8080)")
	pf.StringVar(&a.token, "token", "", "bearer token (env FERRY_TOKEN)")
	pf.StringVar(&a.profile, "profile", "", "profile of the configuration file (env FERRY_PROFILE; default: the default profile)")
	pf.StringVarP(&a.output, "output", "o", "json", "output format: json, yaml or table")
	pf.StringVar(&a.query, "query", "", "print only this field of the output: a dotted path, [] maps over a list (messages[].receipt)")
	pf.DurationVar(&a.waitTimeout, "wait-timeout", 10*time.Minute, "how long --wait waits for a work request")
	_ = root.RegisterFlagCompletionFunc("output", fixedCompletion("json", "yaml", "table"))
	_ = root.RegisterFlagCompletionFunc("profile", a.completeProfiles)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	root.AddGroup(&cobra.Group{ID: "control", Title: "Control plane:"}, &cobra.Group{ID: "data", Title: "Data plane:"},
		&cobra.Group{ID: "tool", Title: "ferryctl:"})
	for _, c := range []*cobra.Command{a.compartmentCommand(), a.queueCommand(), a.consumerGroupCommand(),
		a.policyCommand(), a.workRequestCommand(), a.filterCommand()} {
		c.GroupID = "control"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.messageCommand(), a.dlqCommand(), a.consumerCommand()} {
		c.GroupID = "data"
		root.AddCommand(c)
	}
	cfg := a.configCommand()
	cfg.GroupID = "tool"
	root.AddCommand(cfg)
	root.SetHelpCommandGroupID("tool")
	root.SetCompletionCommandGroupID("tool")
	for _, noun := range root.Commands() {
		verbsOnly(noun)
	}
	markRunning(root, &a.running)
	return root
}

// verbsOnly makes a command that only groups others (queue, message, …) runnable, so that cobra checks its
// arguments: an unknown verb is a usage error (cobra answers help, and success, for a command that cannot run),
// and no verb prints the help.
func verbsOnly(cmd *cobra.Command) {
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return usageError{errors.New(msg)}
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	for _, c := range cmd.Commands() {
		verbsOnly(c)
	}
}

// markRunning makes every command's RunE set running first. It cannot be done in PersistentPreRunE: cobra
// checks required flags and flag groups after that hook, and those errors are usage errors.
func markRunning(cmd *cobra.Command, running *bool) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			*running = true
			return run(cmd, args)
		}
	}
	for _, c := range cmd.Commands() {
		markRunning(c, running)
	}
}

// usageError is a mistake of the command line or the configuration (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// report prints err on stderr and returns the exit status it means.
func (a *app) report(cmd *cobra.Command, err error) int {
	var apiErr *apiError
	var wrErr *workRequestError
	var usage usageError
	switch {
	case errors.As(err, &apiErr):
		a.printAPIError(apiErr)
		return exitFailure
	case errors.As(err, &wrErr):
		fmt.Fprintln(a.stderr, "Error:", wrErr.Error())
		return exitFailure
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(a.stderr, "Error: interrupted")
		return exitFailure
	case errors.As(err, &usage) || !a.running:
		fmt.Fprintln(a.stderr, "Error:", err)
		if cmd != nil {
			fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return exitUsage
	default:
		fmt.Fprintln(a.stderr, "Error:", err)
		return exitFailure
	}
}

// fixedCompletion completes a flag's value from a fixed list (enums of the API).
func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}
