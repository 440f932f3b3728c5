package controlplane

import (
	"fmt"

	"github.com/ferry-mq/ferry/fault"
	"github.com/ferry-mq/ferry/openapi/api"
	"github.com/ferry-mq/ferry/persistence"
)

// The resource types of work requests (OCI's entityType).
const (
	resourceQueue         = "queue"
	resourceConsumerGroup = "consumerGroup"
)

// requestedCapabilities is what a create or an update says of a queue's capabilities. A request without a
// capabilities list changes none (nil fields); a list replaces the queue's: a capability it leaves out is off.
type requestedCapabilities struct {
	consumerGroups *bool
	primary        persistence.PrimaryGroup // with consumerGroups: the primary group's settings
	largeMessages  *bool
}

// capabilitiesFrom reads a request's capabilities; the primary group's filter must compile.
func capabilitiesFrom(caps *[]api.Capability) (requestedCapabilities, error) {
	out := requestedCapabilities{primary: persistence.PrimaryGroup{Enabled: true}}
	if caps == nil {
		return out, nil
	}
	groups, large := false, false
	for i, c := range *caps {
		// (isPrimaryConsumerGroupEnabled has a default, which the validator writes into every capability.)
		primaryFields := c.PrimaryConsumerGroupDisplayName != nil || c.PrimaryConsumerGroupFilter != nil ||
			c.PrimaryConsumerGroupDeadLetterQueueDeliveryCount != nil
		switch c.Type {
		case api.CapabilityTypeCONSUMERGROUPS:
			if groups {
				return out, fault.InvalidParameter("capabilities[%d]: CONSUMER_GROUPS is listed twice", i)
			}
			groups = true
			if c.IsPrimaryConsumerGroupEnabled != nil {
				out.primary.Enabled = *c.IsPrimaryConsumerGroupEnabled
			}
			if c.PrimaryConsumerGroupDisplayName != nil {
				out.primary.DisplayName = *c.PrimaryConsumerGroupDisplayName
			}
			if f := c.PrimaryConsumerGroupFilter; f != nil {
				if err := compileFilter(fmt.Sprintf("capabilities[%d].primaryConsumerGroupFilter", i), *f); err != nil {
					return out, err
				}
				out.primary.Filter = f
			}
			out.primary.DeadLetterQueueDeliveryCount = int32Ptr(c.PrimaryConsumerGroupDeadLetterQueueDeliveryCount)
		case api.CapabilityTypeLARGEMESSAGES:
			if large {
				return out, fault.InvalidParameter("capabilities[%d]: LARGE_MESSAGES is listed twice", i)
			}
			if primaryFields {
				return out, fault.InvalidParameter("capabilities[%d]: the primary consumer group's fields belong to CONSUMER_GROUPS", i)
			}
			large = true
		}
	}
	out.consumerGroups, out.largeMessages = &groups, &large
	return out, nil
}

// capabilitiesOf is a queue's capabilities in the API's shape (nil when it has none).
func capabilitiesOf(q persistence.Queue) *[]api.Capability {
	var list []api.Capability
	if q.ConsumerGroupsEnabled {
		c := api.Capability{Type: api.CapabilityTypeCONSUMERGROUPS}
		if p := q.Primary; p != nil {
			enabled, name, filter := p.Enabled, p.DisplayName, ""
			if p.Filter != nil {
				filter = *p.Filter
			}
			c.IsPrimaryConsumerGroupEnabled, c.PrimaryConsumerGroupDisplayName, c.PrimaryConsumerGroupFilter = &enabled, &name, &filter
			if n := p.DeadLetterQueueDeliveryCount; n != nil {
				count := int(*n)
				c.PrimaryConsumerGroupDeadLetterQueueDeliveryCount = &count
			}
		}
		list = append(list, c)
	}
	if q.LargeMessages {
		list = append(list, api.Capability{Type: api.CapabilityTypeLARGEMESSAGES})
	}
	if list == nil {
		return nil
	}
	return &list
}

// capabilityNames is a queue's capabilities by name (a queue summary's).
func capabilityNames(q persistence.Queue) *[]api.QueueSummaryCapabilities {
	caps := capabilitiesOf(q)
	if caps == nil {
		return nil
	}
	names := make([]api.QueueSummaryCapabilities, len(*caps))
	for i, c := range *caps {
		names[i] = api.QueueSummaryCapabilities(c.Type)
	}
	return &names
}

// definedTagsOf is a request's defined tags (nil when absent: no change).
func definedTagsOf(t *api.DefinedTags) persistence.DefinedTags {
	if t == nil {
		return nil
	}
	if *t == nil {
		return persistence.DefinedTags{}
	}
	return persistence.DefinedTags(*t)
}
