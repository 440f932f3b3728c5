package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

// Optional fields of the API are sent only when their flag is given, so that the server's defaults (and, in
// updates, the resource's current values) apply otherwise: these helpers return nil for a flag left out.

func optString(cmd *cobra.Command, name string) *string {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	v, _ := cmd.Flags().GetString(name)
	return &v
}

func optInt(cmd *cobra.Command, name string) *int {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	v, _ := cmd.Flags().GetInt(name)
	return &v
}

func optInt64(cmd *cobra.Command, name string) *int64 {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	v, _ := cmd.Flags().GetInt64(name)
	return &v
}

func optBool(cmd *cobra.Command, name string) *bool {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	v, _ := cmd.Flags().GetBool(name)
	return &v
}

func optStrings(cmd *cobra.Command, name string) *[]string {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	v, _ := cmd.Flags().GetStringArray(name)
	return &v
}

// optTags reads a k=v flag (--freeform-tags team=billing,env=dev, repeatable).
func optTags(cmd *cobra.Command, name string) *sdk.FreeformTags {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	v, _ := cmd.Flags().GetStringToString(name)
	tags := sdk.FreeformTags(v)
	return &tags
}

// optJSON reads a flag whose value is JSON of the API's shape (--defined-tags, --attributes).
func optJSON[T any](cmd *cobra.Command, name string) (*T, error) {
	if !cmd.Flags().Changed(name) {
		return nil, nil
	}
	s, _ := cmd.Flags().GetString(name)
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, usagef("--%s: not JSON of the expected shape: %v", name, err)
	}
	return &v, nil
}

// idArg is the id a command acts on: its one argument, or its --<flag> (the API's field name), not both.
func idArg(cmd *cobra.Command, args []string, flag string) (string, error) {
	fromFlag, _ := cmd.Flags().GetString(flag)
	switch {
	case len(args) == 1 && fromFlag != "" && fromFlag != args[0]:
		return "", usagef("the id is given twice: %s and --%s %s", args[0], flag, fromFlag)
	case len(args) == 1:
		return args[0], nil
	case fromFlag != "":
		return fromFlag, nil
	}
	return "", usagef("which one? pass its id as the argument or as --%s", flag)
}

// idCommand is a command that acts on one resource, named by argument or by --<flag>.
func idCommand(use, short, flag, what string, run func(cmd *cobra.Command, id string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := idArg(cmd, args, flag)
			if err != nil {
				return err
			}
			return run(cmd, id)
		},
	}
	cmd.Flags().String(flag, "", "the "+what+"'s OCID (or give it as the argument)")
	return cmd
}

// exactArgs is cobra.ExactArgs with a message that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s", cmd.CommandPath(), names)
		}
		return nil
	}
}

// listFlags are the paging and sorting flags every list has.
type listFlags struct {
	limit     int
	page      string
	all       bool
	sortOrder string
}

func (l *listFlags) register(cmd *cobra.Command, sortBy ...string) {
	f := cmd.Flags()
	f.IntVar(&l.limit, "limit", 0, "the most items of a page (1..1000; the API's default 100)")
	f.StringVar(&l.page, "page", "", "the page to fetch: the opc-next-page of the previous one")
	f.BoolVar(&l.all, "all", false, "follow opc-next-page and print every page as one list")
	if len(sortBy) > 0 {
		f.String("sort-by", "", "sort by "+strings.Join(sortBy, " or "))
		f.StringVar(&l.sortOrder, "sort-order", "", "ASC or DESC")
		_ = cmd.RegisterFlagCompletionFunc("sort-by", fixedCompletion(sortBy...))
		_ = cmd.RegisterFlagCompletionFunc("sort-order", fixedCompletion("ASC", "DESC"))
	}
}

func (l *listFlags) limitParam(cmd *cobra.Command) *int { return optInt(cmd, "limit") }

func (l *listFlags) pageParam() *string {
	if l.page == "" {
		return nil
	}
	return &l.page
}

// sortByParam is --sort-by as a list's own SortBy type (nil when left out).
func sortByParam[T ~string](cmd *cobra.Command) *T {
	s := optString(cmd, "sort-by")
	if s == nil {
		return nil
	}
	v := T(*s)
	return &v
}

func (l *listFlags) sortOrderParam() *sdk.SortOrder {
	if l.sortOrder == "" {
		return nil
	}
	o := sdk.SortOrder(l.sortOrder)
	return &o
}

// lifecycleFlag registers --lifecycle-state.
func lifecycleFlag(cmd *cobra.Command) {
	cmd.Flags().String("lifecycle-state", "", "only resources in this state (ACTIVE, DELETING, DELETED, FAILED, …)")
	_ = cmd.RegisterFlagCompletionFunc("lifecycle-state", fixedCompletion("ACTIVE", "CREATING", "UPDATING", "DELETING", "DELETED", "FAILED"))
}

func lifecycleParam(cmd *cobra.Command) *sdk.LifecycleState {
	s := optString(cmd, "lifecycle-state")
	if s == nil {
		return nil
	}
	v := sdk.LifecycleState(*s)
	return &v
}

// ifMatchFlag registers --if-match (the if-match header of updates, deletes and actions).
func ifMatchFlag(cmd *cobra.Command) {
	cmd.Flags().String("if-match", "", "change only if the resource's etag is still this one (412 NoEtagMatch otherwise)")
}

// retryTokenFlag registers --opc-retry-token (the header of creates).
func retryTokenFlag(cmd *cobra.Command) {
	cmd.Flags().String("opc-retry-token", "", "a token that makes retrying this create safe (24 hours)")
}

func waitFlag(cmd *cobra.Command, wait *bool, what string) {
	cmd.Flags().BoolVar(wait, "wait", false, fmt.Sprintf("wait until the work request %s ends (see --wait-timeout)", what))
}
