package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi/sdk"
)

func (a *app) queueCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "queue", Short: "Queues: create, change, delete and purge them; their stats, channels and consumers"}
	cmd.AddCommand(a.queueCreate(), a.queueGet(), a.queueList(), a.queueUpdate(), a.queueDelete(), a.queuePurge(),
		a.queueMove(), a.queueStats(), a.queueChannels(), a.queueConsumers())
	return cmd
}

// queueSettingFlags are the settings create and update share.
func queueSettingFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("display-name", "", "the queue's name")
	f.Int("visibility-in-seconds", 0, "how long a received message stays invisible (0..43200; default 30)")
	f.Int("timeout-in-seconds", 0, "how long a receive waits by default (0..30; default 30)")
	f.Int("dead-letter-queue-delivery-count", 0, "deliveries before a message moves to the DLQ (0 = no DLQ, 1..1000)")
	f.Int("channel-consumption-limit", 0, "the percent of the queue one channel may fill (1..100; default 100)")
	f.Int64("max-size-in-bytes", 0, "the queue's size limit (1 MiB..1 TiB; default 2 GiB)")
	f.Int("deduplication-window-in-seconds", 0, "how long a deduplicationId is remembered (0..86400)")
	f.Bool("is-single-active-consumer", false, "one consumer per consumer group receives, in publish order")
	f.Int("consumer-lease-in-seconds", 0, "the single active consumer's lease (5..300; default 30)")
	f.String("custom-encryption-key-id", "", "kept and returned for OCI clients")
	f.String("capabilities", "", `CONSUMER_GROUPS and/or LARGE_MESSAGES (comma-separated), or the API's JSON list ([{"type":"CONSUMER_GROUPS",…}])`)
	f.StringToString("freeform-tags", nil, "tags as key=value (repeatable)")
	f.String("defined-tags", "", `defined tags as JSON ({"namespace":{"key":"value"}})`)
}

// capabilitiesFlag reads --capabilities: type names, or the API's JSON.
func capabilitiesFlag(cmd *cobra.Command) (*[]sdk.Capability, error) {
	s := optString(cmd, "capabilities")
	if s == nil {
		return nil, nil
	}
	caps := []sdk.Capability{}
	if strings.HasPrefix(strings.TrimSpace(*s), "[") {
		if err := json.Unmarshal([]byte(*s), &caps); err != nil {
			return nil, usagef("--capabilities: not a JSON list of capabilities: %v", err)
		}
		return &caps, nil
	}
	for _, t := range strings.Split(*s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			caps = append(caps, sdk.Capability{Type: sdk.CapabilityType(strings.ToUpper(t))})
		}
	}
	return &caps, nil
}

func (a *app) queueCreate() *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:     "create --display-name NAME [--compartment-id ID] [settings]",
		Short:   "Create a queue (in the root compartment unless --compartment-id says otherwise)",
		Example: `  ferryctl queue create --display-name orders --dead-letter-queue-delivery-count 5 --capabilities CONSUMER_GROUPS`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			compartment, err := a.defaultCompartment(flagString(cmd, "compartment-id"))
			if err != nil {
				return err
			}
			caps, err := capabilitiesFlag(cmd)
			if err != nil {
				return err
			}
			defined, err := optJSON[sdk.DefinedTags](cmd, "defined-tags")
			if err != nil {
				return err
			}
			body := sdk.CreateQueueDetails{
				CompartmentId: compartment, DisplayName: flagString(cmd, "display-name"), Capabilities: caps,
				RetentionInSeconds: optInt(cmd, "retention-in-seconds"), VisibilityInSeconds: optInt(cmd, "visibility-in-seconds"),
				TimeoutInSeconds: optInt(cmd, "timeout-in-seconds"), DeadLetterQueueDeliveryCount: optInt(cmd, "dead-letter-queue-delivery-count"),
				ChannelConsumptionLimit: optInt(cmd, "channel-consumption-limit"), MaxSizeInBytes: optInt64(cmd, "max-size-in-bytes"),
				DeduplicationWindowInSeconds: optInt(cmd, "deduplication-window-in-seconds"),
				IsSingleActiveConsumer:       optBool(cmd, "is-single-active-consumer"), ConsumerLeaseInSeconds: optInt(cmd, "consumer-lease-in-seconds"),
				CustomEncryptionKeyId: optString(cmd, "custom-encryption-key-id"), FreeformTags: optTags(cmd, "freeform-tags"), DefinedTags: defined,
			}
			r, err := check(c.CreateQueueWithResponse(cmd.Context(), &sdk.CreateQueueParams{OpcRetryToken: optString(cmd, "opc-retry-token")}, body))
			if err != nil {
				return err
			}
			return a.accepted(cmd.Context(), r, queueView, wait)
		},
	}
	queueSettingFlags(cmd)
	cmd.Flags().String("compartment-id", "", "the compartment (default: the root compartment)")
	cmd.Flags().Int("retention-in-seconds", 0, "how long a message is kept (10..604800; default 86400; cannot change)")
	retryTokenFlag(cmd)
	waitFlag(cmd, &wait, "of the creation")
	_ = cmd.MarkFlagRequired("display-name")
	return cmd
}

func (a *app) queueGet() *cobra.Command {
	return idCommand("get QUEUE_ID", "Get a queue", "queue-id", "queue", func(cmd *cobra.Command, id string) error {
		return a.show(queueView, func(c *sdk.ClientWithResponses) (*reply, error) {
			return check(c.GetQueueWithResponse(cmd.Context(), id, &sdk.GetQueueParams{}))
		})
	})
}

func (a *app) queueList() *cobra.Command {
	var lf listFlags
	cmd := &cobra.Command{
		Use:   "list [--compartment-id ID]",
		Short: "List queues (default: those of the root compartment)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := sdk.ListQueuesParams{CompartmentId: optString(cmd, "compartment-id"), CompartmentIdInSubtree: optBool(cmd, "compartment-id-in-subtree"),
				DisplayName: optString(cmd, "display-name"), Id: optString(cmd, "id"), LifecycleState: lifecycleParam(cmd),
				Limit: lf.limitParam(cmd), SortOrder: lf.sortOrderParam()}
			p.SortBy = sortByParam[sdk.ListQueuesParamsSortBy](cmd)
			return a.list(cmd.Context(), queueView.listOf("items"), &lf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListQueuesWithResponse(ctx, &p))
			})
		},
	}
	cmd.Flags().String("compartment-id", "", "the compartment (default: the root compartment)")
	cmd.Flags().Bool("compartment-id-in-subtree", false, "list the compartment's whole subtree")
	cmd.Flags().String("display-name", "", "only the queue of this name")
	cmd.Flags().String("id", "", "only the queue of this OCID")
	lifecycleFlag(cmd)
	lf.register(cmd, "timeCreated", "displayName")
	return cmd
}

func (a *app) queueUpdate() *cobra.Command {
	var wait bool
	cmd := idCommand("update QUEUE_ID [settings]", "Change a queue's settings (only those given)", "queue-id", "queue",
		func(cmd *cobra.Command, id string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			caps, err := capabilitiesFlag(cmd)
			if err != nil {
				return err
			}
			defined, err := optJSON[sdk.DefinedTags](cmd, "defined-tags")
			if err != nil {
				return err
			}
			body := sdk.UpdateQueueDetails{
				DisplayName: optString(cmd, "display-name"), Capabilities: caps, VisibilityInSeconds: optInt(cmd, "visibility-in-seconds"),
				TimeoutInSeconds: optInt(cmd, "timeout-in-seconds"), DeadLetterQueueDeliveryCount: optInt(cmd, "dead-letter-queue-delivery-count"),
				ChannelConsumptionLimit: optInt(cmd, "channel-consumption-limit"), MaxSizeInBytes: optInt64(cmd, "max-size-in-bytes"),
				DeduplicationWindowInSeconds: optInt(cmd, "deduplication-window-in-seconds"),
				IsSingleActiveConsumer:       optBool(cmd, "is-single-active-consumer"), ConsumerLeaseInSeconds: optInt(cmd, "consumer-lease-in-seconds"),
				CustomEncryptionKeyId: optString(cmd, "custom-encryption-key-id"), FreeformTags: optTags(cmd, "freeform-tags"), DefinedTags: defined,
			}
			r, err := check(c.UpdateQueueWithResponse(cmd.Context(), id, &sdk.UpdateQueueParams{IfMatch: optString(cmd, "if-match")}, body))
			if err != nil {
				return err
			}
			return a.accepted(cmd.Context(), r, queueView, wait)
		})
	queueSettingFlags(cmd)
	ifMatchFlag(cmd)
	waitFlag(cmd, &wait, "of the update")
	return cmd
}

func (a *app) queueDelete() *cobra.Command {
	var wait bool
	cmd := idCommand("delete QUEUE_ID", "Delete a queue and its messages (in the background: prints the work request)", "queue-id", "queue",
		func(cmd *cobra.Command, id string) error {
			return a.submit(cmd.Context(), workRequestView, wait, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.DeleteQueueWithResponse(cmd.Context(), id, &sdk.DeleteQueueParams{IfMatch: optString(cmd, "if-match")}))
			})
		})
	ifMatchFlag(cmd)
	waitFlag(cmd, &wait, "of the deletion")
	return cmd
}

func (a *app) queuePurge() *cobra.Command {
	var wait bool
	cmd := idCommand("purge QUEUE_ID [--purge-type NORMAL|DLQ|BOTH]", "Delete a queue's messages (in the background: prints the work request)",
		"queue-id", "queue", func(cmd *cobra.Command, id string) error {
			return a.submit(cmd.Context(), workRequestView, wait, func(c *sdk.ClientWithResponses) (*reply, error) {
				body := sdk.PurgeQueueDetails{PurgeType: sdk.PurgeType(flagString(cmd, "purge-type")), ConsumerGroupId: optString(cmd, "consumer-group-id")}
				if cmd.Flags().Changed("channel-ids") {
					ids, _ := cmd.Flags().GetStringArray("channel-ids")
					body.ChannelIds = &ids
				}
				return check(c.PurgeQueueWithResponse(cmd.Context(), id, &sdk.PurgeQueueParams{IfMatch: optString(cmd, "if-match")}, body))
			})
		})
	cmd.Flags().String("purge-type", string(sdk.PurgeTypeNORMAL), "NORMAL (the queue), DLQ (its dead-letter queue) or BOTH")
	cmd.Flags().StringArray("channel-ids", nil, `only this channel ("" = the default channel; repeatable; default: every channel)`)
	cmd.Flags().String("consumer-group-id", "", `the consumer group (OCID or display name; "all" = every group; default: the primary)`)
	_ = cmd.RegisterFlagCompletionFunc("purge-type", fixedCompletion("NORMAL", "DLQ", "BOTH"))
	ifMatchFlag(cmd)
	waitFlag(cmd, &wait, "of the purge")
	return cmd
}

func (a *app) queueMove() *cobra.Command {
	var wait bool
	cmd := idCommand("move QUEUE_ID --compartment-id ID", "Move a queue to another compartment", "queue-id", "queue",
		func(cmd *cobra.Command, id string) error {
			return a.submit(cmd.Context(), queueView, wait, func(c *sdk.ClientWithResponses) (*reply, error) {
				body := sdk.ChangeQueueCompartmentDetails{CompartmentId: flagString(cmd, "compartment-id")}
				return check(c.ChangeQueueCompartmentWithResponse(cmd.Context(), id, &sdk.ChangeQueueCompartmentParams{IfMatch: optString(cmd, "if-match")}, body))
			})
		})
	cmd.Flags().String("compartment-id", "", "the compartment to move the queue to")
	_ = cmd.MarkFlagRequired("compartment-id")
	ifMatchFlag(cmd)
	waitFlag(cmd, &wait, "of the move")
	return cmd
}

func (a *app) queueStats() *cobra.Command {
	cmd := idCommand("stats QUEUE_ID", "Visible, in-flight and delayed messages of a queue, its DLQ and its consumer groups", "queue-id", "queue",
		func(cmd *cobra.Command, id string) error {
			return a.show(statsView, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.GetStatsWithResponse(cmd.Context(), id, &sdk.GetStatsParams{
					ConsumerGroupId: optString(cmd, "consumer-group-id"), ChannelId: optString(cmd, "channel-id")}))
			})
		})
	cmd.Flags().String("consumer-group-id", "", "only this consumer group (OCID or display name)")
	cmd.Flags().String("channel-id", "", "only this channel")
	return cmd
}

func (a *app) queueChannels() *cobra.Command {
	var lf listFlags
	cmd := idCommand("channels QUEUE_ID", "List a queue's non-empty channels", "queue-id", "queue",
		func(cmd *cobra.Command, id string) error {
			p := sdk.ListChannelsParams{ConsumerGroupId: optString(cmd, "consumer-group-id"), ChannelFilter: optString(cmd, "channel-filter"),
				Limit: lf.limitParam(cmd)}
			return a.list(cmd.Context(), channelsView, &lf, func(ctx context.Context, c *sdk.ClientWithResponses, page *string) (*reply, error) {
				p.Page = page
				return check(c.ListChannelsWithResponse(ctx, id, &p))
			})
		})
	cmd.Flags().String("consumer-group-id", "", "the consumer group (OCID or display name; default: the primary)")
	cmd.Flags().String("channel-filter", "", "a channel id, or a prefix ending in *")
	lf.register(cmd)
	return cmd
}

func (a *app) queueConsumers() *cobra.Command {
	cmd := idCommand("consumers QUEUE_ID", "List the live consumers (watches, single active consumers) of a queue's groups", "queue-id", "queue",
		func(cmd *cobra.Command, id string) error {
			return a.show(consumersView, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.ListConsumersWithResponse(cmd.Context(), id, &sdk.ListConsumersParams{ConsumerGroupId: optString(cmd, "consumer-group-id")}))
			})
		})
	cmd.Flags().String("consumer-group-id", "", "only this consumer group (OCID or display name)")
	return cmd
}
