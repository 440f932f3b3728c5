package main

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

func (a *app) consumerGroupCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "consumer-group", Short: "Consumer groups of queues with the CONSUMER_GROUPS capability"}

	var createWait bool
	create := &cobra.Command{
		Use:     "create --queue-id ID --display-name NAME [--filter EXPR]",
		Short:   "Create a consumer group",
		Example: `  ferryctl consumer-group create --queue-id ocid1.queue… --display-name billing --filter ':team = "billing"'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			defined, err := optJSON[sdk.DefinedTags](cmd, "defined-tags")
			if err != nil {
				return err
			}
			body := sdk.CreateConsumerGroupDetails{QueueId: flagString(cmd, "queue-id"), DisplayName: flagString(cmd, "display-name"),
				Filter: optString(cmd, "filter"), IsEnabled: optBool(cmd, "is-enabled"),
				DeadLetterQueueDeliveryCount: optInt(cmd, "dead-letter-queue-delivery-count"), FreeformTags: optTags(cmd, "freeform-tags"), DefinedTags: defined}
			r, err := check(c.CreateConsumerGroupWithResponse(cmd.Context(), &sdk.CreateConsumerGroupParams{OpcRetryToken: optString(cmd, "opc-retry-token")}, body))
			if err != nil {
				return err
			}
			return a.accepted(cmd.Context(), r, consumerGroupView, createWait)
		},
	}
	create.Flags().String("queue-id", "", "the queue")
	create.Flags().String("display-name", "", "the name, unique in the queue")
	groupSettingFlags(create)
	retryTokenFlag(create)
	waitFlag(create, &createWait, "of the creation")
	_ = create.MarkFlagRequired("queue-id")
	_ = create.MarkFlagRequired("display-name")

	get := idCommand("get CONSUMER_GROUP_ID", "Get a consumer group", "consumer-group-id", "consumer group",
		func(cmd *cobra.Command, id string) error {
			return a.show(consumerGroupView, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.GetConsumerGroupWithResponse(cmd.Context(), id, &sdk.GetConsumerGroupParams{}))
			})
		})

	var lf listFlags
	list := &cobra.Command{
		Use:   "list --queue-id ID",
		Short: "List a queue's consumer groups",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := sdk.ListConsumerGroupsParams{QueueId: flagString(cmd, "queue-id"), DisplayName: optString(cmd, "display-name"),
				Id: optString(cmd, "id"), LifecycleState: lifecycleParam(cmd), Limit: lf.limitParam(cmd), SortOrder: lf.sortOrderParam()}
			p.SortBy = sortByParam[sdk.ListConsumerGroupsParamsSortBy](cmd)
			return a.list(cmd.Context(), consumerGroupView.listOf("items"), &lf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListConsumerGroupsWithResponse(ctx, &p))
			})
		},
	}
	list.Flags().String("queue-id", "", "the queue")
	list.Flags().String("display-name", "", "only the group of this name")
	list.Flags().String("id", "", "only the group of this OCID")
	lifecycleFlag(list)
	lf.register(list, "timeCreated", "displayName")
	_ = list.MarkFlagRequired("queue-id")

	var updateWait bool
	update := idCommand("update CONSUMER_GROUP_ID", "Change a consumer group (only the fields given)", "consumer-group-id", "consumer group",
		func(cmd *cobra.Command, id string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			defined, err := optJSON[sdk.DefinedTags](cmd, "defined-tags")
			if err != nil {
				return err
			}
			body := sdk.UpdateConsumerGroupDetails{DisplayName: optString(cmd, "display-name"), Filter: optString(cmd, "filter"),
				IsEnabled: optBool(cmd, "is-enabled"), DeadLetterQueueDeliveryCount: optInt(cmd, "dead-letter-queue-delivery-count"),
				FreeformTags: optTags(cmd, "freeform-tags"), DefinedTags: defined}
			r, err := check(c.UpdateConsumerGroupWithResponse(cmd.Context(), id, &sdk.UpdateConsumerGroupParams{IfMatch: optString(cmd, "if-match")}, body))
			if err != nil {
				return err
			}
			return a.accepted(cmd.Context(), r, consumerGroupView, updateWait)
		})
	update.Flags().String("display-name", "", "the new name")
	groupSettingFlags(update)
	ifMatchFlag(update)
	waitFlag(update, &updateWait, "of the update")

	var deleteWait bool
	del := idCommand("delete CONSUMER_GROUP_ID", "Delete a consumer group (not the primary one)", "consumer-group-id", "consumer group",
		func(cmd *cobra.Command, id string) error {
			return a.submit(cmd.Context(), workRequestView, deleteWait, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.DeleteConsumerGroupWithResponse(cmd.Context(), id, &sdk.DeleteConsumerGroupParams{IfMatch: optString(cmd, "if-match")}))
			})
		})
	ifMatchFlag(del)
	waitFlag(del, &deleteWait, "of the deletion")

	cmd.AddCommand(create, get, list, update, del)
	return cmd
}

func groupSettingFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("filter", "", `which messages the group takes, e.g. ':team = "billing" AND :amount > 100' ("" = every message)`)
	f.Bool("is-enabled", true, "whether the group receives messages")
	f.Int("dead-letter-queue-delivery-count", 0, "deliveries before a message moves to the group's DLQ (default: the queue's)")
	f.StringToString("freeform-tags", nil, "tags as key=value (repeatable)")
	f.String("defined-tags", "", `defined tags as JSON ({"namespace":{"key":"value"}})`)
}

func (a *app) filterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "filter", Short: "Consumer-group filters"}
	validate := &cobra.Command{
		Use:     "validate --filter EXPR [--attributes JSON]...",
		Short:   "Check a filter, and evaluate it on sample attribute sets",
		Example: `  ferryctl filter validate --filter ':amount > 100' --attributes '{"amount":120}' --attributes '{"amount":5}'`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			body := sdk.ValidateFilterDetails{Filter: flagString(cmd, "filter")}
			if cmd.Flags().Changed("attributes") {
				samples, _ := cmd.Flags().GetStringArray("attributes")
				sets := make([]sdk.MessageAttributes, len(samples))
				for i, s := range samples {
					if err := json.Unmarshal([]byte(s), &sets[i]); err != nil {
						return usagef("--attributes %q: not a JSON object: %v", s, err)
					}
				}
				body.Attributes = &sets
			}
			r, err := check(c.ValidateConsumerGroupFilterWithResponse(cmd.Context(), &sdk.ValidateConsumerGroupFilterParams{}, body))
			if err != nil {
				return err
			}
			return a.emit(filterView, r.body)
		},
	}
	validate.Flags().String("filter", "", "the filter")
	validate.Flags().StringArray("attributes", nil, `a sample attribute set as JSON (repeatable): {"team":"billing","amount":120}`)
	_ = validate.MarkFlagRequired("filter")
	cmd.AddCommand(validate)
	return cmd
}

func (a *app) workRequestCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "work-request", Short: "Work requests: the record of every change of a queue or a consumer group"}

	get := idCommand("get WORK_REQUEST_ID", "Get a work request", "work-request-id", "work request",
		func(cmd *cobra.Command, id string) error {
			r, err := a.getWorkRequest(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.emit(workRequestView, r.body)
		})

	var lf listFlags
	list := &cobra.Command{
		Use:   "list [--compartment-id ID] [--resource-id ID]",
		Short: "List work requests (default: those of the root compartment)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := sdk.ListWorkRequestsParams{CompartmentId: optString(cmd, "compartment-id"), ResourceId: optString(cmd, "resource-id"),
				WorkRequestId: optString(cmd, "work-request-id"), Limit: lf.limitParam(cmd)}
			return a.list(cmd.Context(), workRequestView.listOf("items"), &lf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListWorkRequestsWithResponse(ctx, &p))
			})
		},
	}
	list.Flags().String("compartment-id", "", "the compartment (default: the root compartment)")
	list.Flags().String("resource-id", "", "only the work requests of this queue or consumer group")
	list.Flags().String("work-request-id", "", "only this work request")
	lf.register(list)

	var elf listFlags
	errs := idCommand("errors WORK_REQUEST_ID", "List a work request's errors", "work-request-id", "work request",
		func(cmd *cobra.Command, id string) error {
			p := sdk.ListWorkRequestErrorsParams{Limit: elf.limitParam(cmd)}
			return a.list(cmd.Context(), workRequestErrorView, &elf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListWorkRequestErrorsWithResponse(ctx, id, &p))
			})
		})
	elf.register(errs)

	var llf listFlags
	logs := idCommand("logs WORK_REQUEST_ID", "List a work request's log entries", "work-request-id", "work request",
		func(cmd *cobra.Command, id string) error {
			p := sdk.ListWorkRequestLogsParams{Limit: llf.limitParam(cmd)}
			return a.list(cmd.Context(), workRequestLogView, &llf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListWorkRequestLogsWithResponse(ctx, id, &p))
			})
		})
	llf.register(logs)

	cmd.AddCommand(get, list, errs, logs)
	return cmd
}

func (a *app) consumerCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "consumer", Short: "Named consumers (single active consumer, watches)"}
	leave := &cobra.Command{
		Use:   "leave --queue-id ID CONSUMER_ID",
		Short: "Make a consumer leave its group: its messages go to the others at once (a standby takes over)",
		Args:  exactArgs(1, "CONSUMER_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := a.call(func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.DeleteConsumerWithResponse(cmd.Context(), flagString(cmd, "queue-id"), args[0],
					&sdk.DeleteConsumerParams{ConsumerGroupId: optString(cmd, "consumer-group-id")}))
			})
			return err
		},
	}
	leave.Flags().String("queue-id", "", "the queue")
	leave.Flags().String("consumer-group-id", "", "the consumer group (OCID or display name; default: the primary)")
	_ = leave.MarkFlagRequired("queue-id")
	cmd.AddCommand(leave)
	return cmd
}
