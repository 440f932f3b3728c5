// Command limitsgen writes openapi/limits.gen.go: the API's size and range limits read from openapi.yaml, so that
// the validator, the fast body decoders and the services check the same numbers, written down once in the spec.
// make generate runs it; make verify fails when its output differs from what is committed.
//
//	go run ./openapi/internal/limitsgen openapi/openapi.yaml openapi/limits.gen.go
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// limit is one generated constant: its name, what it bounds, and where the spec says so. Where several places
// of the spec must agree (the same limit in a body and in a parameter), they are all listed: the generator fails
// when they differ.
type limit struct {
	name, doc string
	at        []func(spec) (float64, string)
}

var limits = []limit{
	{"MaxPutMessages", "the most messages in a PutMessages batch", []func(spec) (float64, string){
		prop("PutMessagesDetails", "maxItems", "messages")}},
	{"MaxContentLength", "the most characters of a message's content, and the most bytes of its UTF-8 encoding, on a queue with the LARGE_MESSAGES capability", []func(spec) (float64, string){
		prop("PutMessagesDetailsEntry", "maxLength", "content")}},
	{"MaxStandardContentLength", "the most bytes of a message's content on a queue without the LARGE_MESSAGES capability", []func(spec) (float64, string){
		prop("PutMessagesDetailsEntry", "x-ferry-standard-max-length", "content")}},
	{"MaxAttributes", "the most attributes of a message, custom properties included", []func(spec) (float64, string){
		schema("MessageAttributes", "maxProperties"), schema("MessageCustomProperties", "maxProperties")}},
	{"MaxAttributeKeyLength", "the most characters of an attribute's or a custom property's key (OpenAPI 3.0 cannot bound the keys of a map)", []func(spec) (float64, string){
		schema("MessageAttributes", "x-ferry-key-max-length"), schema("MessageCustomProperties", "x-ferry-key-max-length")}},
	{"MaxAttributeValueLength", "the most characters of an attribute's string value or a custom property's value", []func(spec) (float64, string){
		oneOf("AttributeValue", 0, "maxLength"), path("MessageCustomProperties", "additionalProperties", "maxLength")}},
	{"MaxChannelIDLength", "the most characters of a channel id", []func(spec) (float64, string){
		schema("ChannelId", "maxLength"), prop("MessageMetadata", "maxLength", "channelId"),
		path("PurgeQueueDetails", "properties", "channelIds", "items", "maxLength")}},
	{"MaxPurgeChannels", "the most channels one purge names", []func(spec) (float64, string){
		prop("PurgeQueueDetails", "maxItems", "channelIds")}},
	{"MaxMessageGroupIDLength", "the most characters of a messageGroupId", []func(spec) (float64, string){
		prop("MessageMetadata", "maxLength", "messageGroupId")}},
	{"MaxPartitionKeyLength", "the most characters of a partitionKey", []func(spec) (float64, string){
		prop("MessageMetadata", "maxLength", "partitionKey")}},
	{"MaxPartitions", "the most partitions of a partitioned queue", []func(spec) (float64, string){
		prop("CreateQueueDetails", "maximum", "partitionCount")}},
	{"MaxPartitionReadLimit", "the most messages one GetPartitionMessages returns", []func(spec) (float64, string){
		param("GetPartitionMessages", "limit", "maximum")}},
	{"MaxDeduplicationIDLength", "the most characters of a deduplicationId", []func(spec) (float64, string){
		prop("MessageMetadata", "maxLength", "deduplicationId")}},
	{"MaxTraceparentLength", "the most characters of a traceparent", []func(spec) (float64, string){
		prop("MessageMetadata", "maxLength", "traceparent")}},
	{"MaxDelaySeconds", "the longest delay of a message, in seconds", []func(spec) (float64, string){
		prop("MessageMetadata", "maximum", "delayInSeconds")}},
	{"MaxReceiptLength", "the most characters of a receipt", []func(spec) (float64, string){
		schema("MessageReceipt", "maxLength")}},
	{"MaxAckEntries", "the most entries of a deleteMessages or updateMessages batch (one GetMessages' worth)", []func(spec) (float64, string){
		prop("DeleteMessagesDetails", "maxItems", "entries"), prop("UpdateMessagesDetails", "maxItems", "entries")}},
	{"MaxGetLimit", "the most messages one GetMessages leases", []func(spec) (float64, string){
		param("GetMessages", "limit", "maximum")}},
	{"MaxVisibilitySeconds", "the longest lease, in seconds", []func(spec) (float64, string){
		param("GetMessages", "visibilityInSeconds", "maximum"), prop("UpdateMessageDetails", "maximum", "visibilityInSeconds"),
		prop("UpdateMessagesDetailsEntry", "maximum", "visibilityInSeconds")}},
	{"MaxTimeoutSeconds", "the longest long poll of a GetMessages, in seconds", []func(spec) (float64, string){
		param("GetMessages", "timeoutInSeconds", "maximum")}},
	{"MaxWatchWindow", "the most unacknowledged messages a watch holds", []func(spec) (float64, string){
		param("WatchMessages", "window", "maximum")}},
	{"DefaultWatchWindow", "the window of a watch that names none", []func(spec) (float64, string){
		param("WatchMessages", "window", "default")}},
	{"MaxConsumerIDLength", "the most characters of a consumer id", []func(spec) (float64, string){
		schema("ConsumerId", "maxLength")}},
}

// spec is the document as generic JSON values (schemas) and typed operations (parameters).
type spec struct {
	doc     *openapi3.T
	schemas map[string]map[string]any
}

func main() {
	if len(os.Args) != 3 {
		log.Fatal("usage: limitsgen openapi.yaml limits.gen.go")
	}
	doc, err := openapi3.NewLoader().LoadFromFile(os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	s := spec{doc: doc, schemas: map[string]map[string]any{}}
	for name, ref := range doc.Components.Schemas {
		s.schemas[name] = asMap(ref.Value)
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by openapi/internal/limitsgen from openapi.yaml; DO NOT EDIT.\n\npackage openapi\n\n")
	b.WriteString("// The API's limits, as openapi.yaml states them: the request validator enforces them, and the fast body\n")
	b.WriteString("// decoders and the services that take the same values check these constants, so that every layer agrees.\n")
	b.WriteString("const (\n")
	for _, l := range limits {
		var value float64
		var where []string
		for i, at := range l.at {
			v, w := at(s)
			if i > 0 && v != value {
				log.Fatalf("%s: %s says %v, %s says %v", l.name, where[0], value, w, v)
			}
			value, where = v, append(where, w)
		}
		if value != float64(int64(value)) {
			log.Fatalf("%s: %s is %v, not an integer", l.name, where[0], value)
		}
		fmt.Fprintf(&b, "\t// %s is %s.\n\t// openapi.yaml: %s.\n\t%s = %d\n", l.name, l.doc, strings.Join(where, "; "), l.name, int64(value))
	}
	b.WriteString(")\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		log.Fatal(err)
	}
}

func asMap(v any) map[string]any {
	raw, err := json.Marshal(v)
	if err != nil {
		log.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		log.Fatal(err)
	}
	return m
}

func number(m map[string]any, key, where string) (float64, string) {
	v, ok := m[key].(float64)
	if !ok {
		log.Fatalf("%s has no numeric %s", where, key)
	}
	return v, where + " " + key
}

func namedSchema(s spec, name string) map[string]any {
	m, ok := s.schemas[name]
	if !ok {
		log.Fatalf("no schema %s", name)
	}
	return m
}

// schema reads key of a component schema.
func schema(name, key string) func(spec) (float64, string) {
	return func(s spec) (float64, string) { return number(namedSchema(s, name), key, name) }
}

// prop reads key of a property of a component schema.
func prop(name, key, property string) func(spec) (float64, string) {
	return func(s spec) (float64, string) {
		props, _ := namedSchema(s, name)["properties"].(map[string]any)
		p, ok := props[property].(map[string]any)
		if !ok {
			log.Fatalf("schema %s has no property %s", name, property)
		}
		return number(p, key, name+"."+property)
	}
}

// path reads the value at a path of keys within a component schema.
func path(name string, keys ...string) func(spec) (float64, string) {
	return func(s spec) (float64, string) {
		m := namedSchema(s, name)
		where := name
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				log.Fatalf("%s has no %s", where, k)
			}
			m, where = next, where+"."+k
		}
		return number(m, keys[len(keys)-1], where)
	}
}

// oneOf reads key of the i-th alternative of a component schema.
func oneOf(name string, i int, key string) func(spec) (float64, string) {
	return func(s spec) (float64, string) {
		alts, _ := namedSchema(s, name)["oneOf"].([]any)
		if i >= len(alts) {
			log.Fatalf("schema %s has no oneOf[%d]", name, i)
		}
		return number(alts[i].(map[string]any), key, fmt.Sprintf("%s.oneOf[%d]", name, i))
	}
}

// param reads key of the schema of an operation's parameter.
func param(operationID, name, key string) func(spec) (float64, string) {
	return func(s spec) (float64, string) {
		for _, item := range s.doc.Paths.Map() {
			for _, op := range item.Operations() {
				if op.OperationID != operationID {
					continue
				}
				for _, ref := range op.Parameters {
					if ref.Value.Name == name && ref.Value.Schema != nil {
						return number(asMap(ref.Value.Schema.Value), key, operationID+" parameter "+name)
					}
				}
			}
		}
		log.Fatalf("operation %s has no parameter %s", operationID, name)
		return 0, ""
	}
}
