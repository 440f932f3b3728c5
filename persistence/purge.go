package persistence

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-mq/ferry/fault"
)

// A purge is accepted by the control plane (Queues.StartWork, which calls preparePurge under the queue's lock)
// and executed later by the work request executor (messaging.Service.Purge, in batches of Messages.PurgeBatch).
// What it deletes travels in its work request's params, as JSON: what the request said (purgeType, channelIds,
// consumerGroupId), and what preparePurge decided when it accepted it (upToMessageId, groupNos). The consumer
// group is resolved when the purge is accepted, so that a wrong one is refused at once (404) rather than failing
// the work request later, and so that the capability the queue had then decides which groups are purged.

// AllConsumerGroups is the consumerGroupId that purges every consumer group of a queue (OCI's special value).
const AllConsumerGroups = "all"

// Keys of a purge work request's params.
const (
	purgeParamType     = "purgeType"
	purgeParamChannels = "channelIds"
	purgeParamGroup    = "consumerGroupId"
	purgeParamUpTo     = "upToMessageId"
	purgeParamGroupNos = "groupNos" // absent = every group
)

// PurgeScope selects the messages a purge deletes.
type PurgeScope struct {
	DLQ        *bool    // true: the DLQ only, false: the queue only (not its DLQ), nil: both
	GroupNos   []int32  // the consumer groups; nil = every group
	ChannelIDs []string // the channels; nil = every channel
	// UpTo is the highest message id purged: the last one published before the purge was accepted, so that a
	// queue published to faster than it is purged still finishes.
	UpTo int64
}

// PurgeParams are the params of a purge work request as the request states them: purgeType NORMAL, DLQ or BOTH,
// the channels (none = every channel) and consumerGroupId ("" = the primary group, on a queue with the
// CONSUMER_GROUPS capability).
func PurgeParams(purgeType string, channelIDs []string, consumerGroupID string) map[string]any {
	params := map[string]any{purgeParamType: purgeType}
	if len(channelIDs) > 0 {
		params[purgeParamChannels] = channelIDs
	}
	if consumerGroupID != "" {
		params[purgeParamGroup] = consumerGroupID
	}
	return params
}

// consumerGroupOfQueue finds a live consumer group of a queue by OCID or displayName (case-insensitive), as the
// data plane addresses groups; an OCID wins over another group's displayName that happens to equal it.
const consumerGroupOfQueue = `SELECT group_no FROM consumer_groups
	WHERE tenancy_id = $1 AND queue_id = $2 AND lifecycle_state <> 'DELETED' AND (id = $3 OR lower(display_name) = lower($3))
	ORDER BY id = $3 DESC LIMIT 1`

// preparePurge completes the params of a purge of q being accepted in tx: the last message id published so far,
// and the consumer groups it purges. On a queue with the CONSUMER_GROUPS capability that is the primary group
// when the request names none, the named group, or every group for "all"; without the capability, the queue
// (every group), when the request names none, the primary group (the queue's OCID or "primary") or "all". Any
// other consumerGroupId answers 404.
func preparePurge(ctx context.Context, tx pgx.Tx, q Queue, params map[string]any) error {
	var upTo int64
	if err := messagesLastID.queryRow(ctx, tx).Scan(&upTo); err != nil {
		return err
	}
	params[purgeParamUpTo] = upTo
	ref, _ := params[purgeParamGroup].(string)
	notFound := fault.NotFound("consumerGroupId: consumer group %q does not exist in the queue or you are not authorized to access it", ref)
	switch {
	case ref == AllConsumerGroups:
		return nil
	case !q.ConsumerGroupsEnabled:
		if ref == "" || ref == q.ID || strings.EqualFold(ref, PrimaryGroupName) {
			return nil
		}
		return notFound
	case ref == "":
		params[purgeParamGroupNos] = []int32{PrimaryGroupNo}
		return nil
	}
	var no int32
	err := tx.QueryRow(ctx, consumerGroupOfQueue, q.TenancyID, q.ID, ref).Scan(&no)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound
	}
	params[purgeParamGroupNos] = []int32{no}
	return err
}

// PurgeScopeOf reads what a purge deletes from its work request's params as the database returns them (JSON:
// numbers are float64, lists []any). A purge accepted before the params held groupNos purges every group, as
// purges did then.
func PurgeScopeOf(params map[string]any) PurgeScope {
	var s PurgeScope
	switch params[purgeParamType] {
	case "NORMAL":
		s.DLQ = new(bool)
	case "DLQ":
		s.DLQ = new(bool)
		*s.DLQ = true
	}
	if list, ok := params[purgeParamChannels].([]any); ok {
		s.ChannelIDs = make([]string, 0, len(list))
		for _, c := range list {
			if id, ok := c.(string); ok {
				s.ChannelIDs = append(s.ChannelIDs, id)
			}
		}
	}
	if list, ok := params[purgeParamGroupNos].([]any); ok {
		s.GroupNos = make([]int32, 0, len(list))
		for _, g := range list {
			if no, ok := g.(float64); ok {
				s.GroupNos = append(s.GroupNos, int32(no))
			}
		}
	}
	// A JSON number: ids stay far below 2^53. 0 when nothing had been published when the purge was accepted.
	upTo, ok := params[purgeParamUpTo].(float64)
	if !ok {
		return s // UpTo 0: nothing is known to precede the purge, and nothing is deleted
	}
	s.UpTo = int64(upTo)
	return s
}
