package main

import (
	"strconv"
)

// The table views of the API's answers (-o table). Each lists the fields people look for first; the JSON and
// YAML outputs hold everything. Long or free-text columns come last so that the others stay aligned.
var (
	compartmentView = view{columns: []column{
		{header: "NAME", path: "name"},
		{header: "STATE", path: "lifecycleState"},
		{header: "ID", path: "id"},
		{header: "CREATED", path: "timeCreated"},
		{header: "DESCRIPTION", path: "description"},
	}}
	queueView = view{columns: []column{
		{header: "DISPLAY NAME", path: "displayName"},
		{header: "STATE", path: "lifecycleState"},
		{header: "ID", path: "id"},
		{header: "CREATED", path: "timeCreated"},
	}}
	consumerGroupView = view{columns: []column{
		{header: "DISPLAY NAME", path: "displayName"},
		{header: "PRIMARY", path: "isPrimary"},
		{header: "ENABLED", path: "isEnabled"},
		{header: "STATE", path: "lifecycleState"},
		{header: "ID", path: "id"},
		{header: "FILTER", path: "filter"},
	}}
	policyView = view{columns: []column{
		{header: "NAME", path: "name"},
		{header: "STATE", path: "lifecycleState"},
		{header: "STATEMENTS", path: "statements", format: count},
		{header: "ID", path: "id"},
		{header: "DESCRIPTION", path: "description"},
	}}
	workRequestView = view{columns: []column{
		{header: "OPERATION", path: "operationType"},
		{header: "STATUS", path: "status"},
		{header: "PERCENT", path: "percentComplete"},
		{header: "ID", path: "id"},
		{header: "ACCEPTED", path: "timeAccepted"},
		{header: "RESOURCE", path: "resources", format: firstResource},
	}}
	workRequestErrorView = view{columns: []column{
		{header: "TIMESTAMP", path: "timestamp"},
		{header: "CODE", path: "code"},
		{header: "MESSAGE", path: "message"},
	}}.listOf("items")
	workRequestLogView = view{columns: []column{
		{header: "TIMESTAMP", path: "timestamp"},
		{header: "MESSAGE", path: "message"},
	}}.listOf("items")

	putResultView = view{columns: []column{
		{header: "ID", path: "id"},
		{header: "CONSUMER GROUPS", path: "consumerGroups"},
		{header: "EXPIRE AFTER", path: "expireAfter"},
	}}.listOf("messages")
	messagesView = view{columns: []column{
		{header: "ID", path: "id"},
		{header: "DELIVERIES", path: "deliveryCount"},
		{header: "CHANNEL", path: "metadata.channelId"},
		{header: "VISIBLE AFTER", path: "visibleAfter"},
		{header: "CONTENT", path: "content", format: truncate(40)},
		{header: "RECEIPT", path: "receipt"},
	}}.listOf("messages")
	updatedMessageView = view{columns: []column{
		{header: "ID", path: "id"},
		{header: "VISIBLE AFTER", path: "visibleAfter"},
	}}
	batchResultView = view{rows: numberedEntries, columns: []column{
		{header: "ENTRY", path: "entry"},
		{header: "RESULT", path: "result"},
		{header: "ID", path: "value.id"},
		{header: "VISIBLE AFTER", path: "value.visibleAfter"},
		{header: "MESSAGE", path: "value.errorMessage"},
	}}
	statsView = view{rows: statsRows, columns: []column{
		{header: "CONSUMER GROUP", path: "name"},
		{header: "VISIBLE", path: "queue.visibleMessages"},
		{header: "IN FLIGHT", path: "queue.inFlightMessages"},
		{header: "DELAYED", path: "queue.delayedMessages"},
		{header: "BYTES", path: "queue.sizeInBytes"},
		{header: "DLQ VISIBLE", path: "dlq.visibleMessages"},
		{header: "DLQ IN FLIGHT", path: "dlq.inFlightMessages"},
		{header: "DLQ BYTES", path: "dlq.sizeInBytes"},
	}}
	channelsView = view{columns: []column{
		{header: "CHANNEL", path: "", format: channelName},
	}}.listOf("items")
	consumersView = view{columns: []column{
		{header: "ID", path: "id"},
		{header: "CONSUMER GROUP", path: "consumerGroupId"},
		{header: "KIND", path: "kind"},
		{header: "STATUS", path: "status"},
		{header: "PENDING", path: "pending"},
		{header: "WINDOW", path: "window"},
		{header: "DELIVERED", path: "delivered"},
		{header: "IDLE SECONDS", path: "idleSeconds"},
	}}.listOf("items")
	redriveView = view{columns: []column{
		{header: "REDRIVEN", path: "redrivenMessages"},
	}}
	authorizeView = view{rows: authorizeRows, columns: []column{
		{header: "ALLOWED", path: "allowed"},
		{header: "POLICY", path: "policyId"},
		{header: "STATEMENT", path: "statement"},
	}}
	filterView = view{columns: []column{
		{header: "VALID", path: "valid"},
		{header: "MATCHES", path: "matches"},
		{header: "ERROR", path: "error"},
	}}
	profilesView = view{columns: []column{
		{header: "NAME", path: "name"},
		{header: "DEFAULT", path: "isDefault", format: func(v any) string {
			if v == true {
				return "*"
			}
			return ""
		}},
		{header: "ENDPOINT", path: "endpoint"},
	}}.listOf("items")
)

func count(v any) string {
	list, _ := v.([]any)
	return strconv.Itoa(len(list))
}

// firstResource shows a work request's resource: what it acts on.
func firstResource(v any) string {
	list, _ := v.([]any)
	if len(list) == 0 {
		return ""
	}
	return cell(lookup(list[0], "identifier"))
}

// channelName shows the default channel (the empty id) by name.
func channelName(v any) string {
	if v == "" {
		return "(default)"
	}
	return cell(v)
}

// numberedEntries are the entries of a batch answer (deleteMessages, updateMessages), numbered as the request's
// were, with "ok" or the entry's error.
func numberedEntries(doc any) []any {
	list, _ := lookup(doc, "entries").([]any)
	rows := make([]any, len(list))
	for i, e := range list {
		result := "ok"
		if code := lookup(e, "code"); code != nil {
			result = cell(lookup(e, "errorCode")) + " " + cell(code)
		}
		rows[i] = map[string]any{"entry": strconv.Itoa(i), "result": result, "value": e}
	}
	return rows
}

// statsRows are each consumer group's figures when the queue has groups, else the queue's. (With groups, the
// answer's top-level figures are those of one group, the primary unless --consumer-group-id names another: a row
// of them would repeat that group's.)
func statsRows(doc any) []any {
	groups, _ := lookup(doc, "consumerGroups").([]any)
	if len(groups) == 0 {
		return []any{map[string]any{"name": "(queue)", "queue": lookup(doc, "queue"), "dlq": lookup(doc, "dlq")}}
	}
	rows := make([]any, len(groups))
	for i, g := range groups {
		rows[i] = map[string]any{"name": lookup(g, "displayName"), "queue": lookup(g, "queue"), "dlq": lookup(g, "dlq")}
	}
	return rows
}

// authorizeRows are the statements that allowed a simulated request, or one row that says it is denied.
func authorizeRows(doc any) []any {
	matched, _ := lookup(doc, "matchedStatements").([]any)
	if len(matched) == 0 {
		return []any{map[string]any{"allowed": lookup(doc, "allowed")}}
	}
	rows := make([]any, len(matched))
	for i, m := range matched {
		rows[i] = map[string]any{"allowed": lookup(doc, "allowed"), "policyId": lookup(m, "policyId"), "statement": lookup(m, "statement")}
	}
	return rows
}
