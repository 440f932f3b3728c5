package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/openapi/sdk"
)

// putBodyLimit is the most bytes of a PutMessages request (the data plane's body limit,
// services/server.DataPlaneBodyLimit, which is not imported: it would link the server into ferryctl), less room
// for the envelope. A batch is sent early when its next message would not fit.
const putBodyLimit = 2<<20 - 4<<10

func (a *app) messageCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "message", Short: "Put, receive, acknowledge and watch messages"}
	cmd.AddCommand(a.messagePut(), a.messageGet(false), a.messageDelete(), a.messageUpdate(), a.messageWatch())
	return cmd
}

func (a *app) dlqCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "Dead-letter queues: receive dead letters, redrive them"}
	redrive := &cobra.Command{
		Use:   "redrive --queue-id ID [--consumer-group-id G] [--limit N]",
		Short: "Move messages of a dead-letter queue back to its queue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.show(redriveView, func(c *sdk.ClientWithResponses) (*reply, error) {
				body := sdk.RedriveMessagesDetails{ConsumerGroupId: optString(cmd, "consumer-group-id"), Limit: optInt(cmd, "limit")}
				return check(c.RedriveMessagesWithResponse(cmd.Context(), flagString(cmd, "queue-id"), &sdk.RedriveMessagesParams{}, body))
			})
		},
	}
	redrive.Flags().String("queue-id", "", "the queue")
	redrive.Flags().String("consumer-group-id", "", "the consumer group (OCID or display name; default: the primary)")
	redrive.Flags().Int("limit", 0, "the most messages to move (default: all)")
	_ = redrive.MarkFlagRequired("queue-id")
	cmd.AddCommand(a.messageGet(true), redrive)
	return cmd
}

// messageGet is message get, and dlq get (the same operation on the dead-letter queue).
func (a *app) messageGet(dlq bool) *cobra.Command {
	short := "Receive (lease) messages, waiting up to --timeout-in-seconds for the first"
	if dlq {
		short = "Receive (lease) messages of a dead-letter queue"
	}
	cmd := &cobra.Command{
		Use:   "get --queue-id ID [--limit N]",
		Short: short,
		Long: short + `. Each message has a receipt, valid for this lease: acknowledge it with
"ferryctl message delete", or extend or release it with "ferryctl message update".`,
		Example: `  ferryctl message get --queue-id $Q --limit 10 --timeout-in-seconds 5 -o table`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := sdk.GetMessagesParams{ConsumerGroupId: optString(cmd, "consumer-group-id"), ConsumerId: optString(cmd, "consumer-id"),
				Limit: optInt(cmd, "limit"), VisibilityInSeconds: optInt(cmd, "visibility-in-seconds"),
				TimeoutInSeconds: optInt(cmd, "timeout-in-seconds"), ChannelFilter: optString(cmd, "channel-filter")}
			if dlq {
				p.Dlq = &dlq
			}
			return a.show(messagesView, func(c *sdk.ClientWithResponses) (*reply, error) {
				return check(c.GetMessagesWithResponse(cmd.Context(), flagString(cmd, "queue-id"), &p))
			})
		},
	}
	f := cmd.Flags()
	f.String("queue-id", "", "the queue")
	f.String("consumer-group-id", "", "the consumer group (OCID or display name; default: the primary)")
	f.String("consumer-id", "", "the consumer's name (single active consumer)")
	f.Int("limit", 0, fmt.Sprintf("the most messages to lease (1..%d; default 1)", openapi.MaxGetLimit))
	f.Int("visibility-in-seconds", 0, "how long they stay invisible (default: the queue's)")
	f.Int("timeout-in-seconds", 0, "how long to wait for the first message (0..30; default: the queue's)")
	f.String("channel-filter", "", "a channel id, or a prefix ending in *")
	_ = cmd.MarkFlagRequired("queue-id")
	return cmd
}

func (a *app) messagePut() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "put --queue-id ID [CONTENT|-]... [--file PATH]...",
		Short: "Put messages: each argument, each --file, or each line of stdin (-) is one message",
		Long: `Put messages, in order: each argument is one message's content; "-" reads stdin, one message per
line (empty lines are skipped); each --file is one message holding the file's content. They are sent in
batches of --batch-size (default 20, the API's most), a batch also ending early when it would pass the
request size limit. The answers of all batches are printed as one {"messages":[…]}. The metadata flags
apply to every message.`,
		Example: `  ferryctl message put --queue-id $Q hello world
  seq 100 | ferryctl message put --queue-id $Q -
  ferryctl message put --queue-id $Q --file order.json --attributes '{"team":"billing","amount":120}'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			template, err := putTemplate(cmd)
			if err != nil {
				return err
			}
			files, _ := cmd.Flags().GetStringArray("file")
			if len(args) == 0 && len(files) == 0 {
				return usagef("nothing to put: give contents as arguments, - for stdin lines, or --file")
			}
			size, _ := cmd.Flags().GetInt("batch-size")
			if size < 1 || size > openapi.MaxPutMessages {
				return usagef("--batch-size must be 1..%d", openapi.MaxPutMessages)
			}
			p := &putter{a: a, c: c, ctx: cmd.Context(), queueID: flagString(cmd, "queue-id"), size: size}
			err = forEachContent(a.stdin, args, files, func(content string) error {
				entry := template
				entry.Content = content
				return p.add(entry)
			})
			if err == nil {
				err = p.flush()
			}
			if err != nil && len(p.results) > 0 {
				fmt.Fprintf(a.stderr, "%d messages were put before the failure (printed)\n", len(p.results))
			}
			if len(p.results) > 0 || err == nil {
				out := p.raw // one batch: the API's answer as it came
				if p.calls != 1 {
					var merr error
					if out, merr = json.Marshal(struct {
						Messages []json.RawMessage `json:"messages"`
					}{append([]json.RawMessage{}, p.results...)}); merr != nil {
						return merr
					}
				}
				if perr := a.emit(putResultView, out); perr != nil && err == nil {
					err = perr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.String("queue-id", "", "the queue")
	f.StringArray("file", nil, "a file whose content is one message (repeatable)")
	f.Int("batch-size", openapi.MaxPutMessages, "messages per PutMessages call (1..20)")
	f.String("attributes", "", `attributes as a JSON object: {"team":"billing","amount":120}`)
	f.StringToString("custom-properties", nil, "custom properties as key=value (repeatable)")
	f.String("channel-id", "", "the channel (default: the default channel)")
	f.String("message-group-id", "", "the ordered message group")
	f.String("deduplication-id", "", "the deduplication id (with the queue's deduplication window)")
	f.Int("delay-in-seconds", 0, fmt.Sprintf("deliver after this delay (0..%d)", openapi.MaxDelaySeconds))
	f.String("traceparent", "", "a W3C traceparent")
	_ = cmd.MarkFlagRequired("queue-id")
	return cmd
}

// putTemplate is the entry every message of a put starts from: the attributes and metadata flags.
func putTemplate(cmd *cobra.Command) (sdk.PutMessagesDetailsEntry, error) {
	var e sdk.PutMessagesDetailsEntry
	attrs, err := optJSON[sdk.MessageAttributes](cmd, "attributes")
	if err != nil {
		return e, err
	}
	e.Attributes = attrs
	md := sdk.MessageMetadata{ChannelId: optString(cmd, "channel-id"), MessageGroupId: optString(cmd, "message-group-id"),
		DeduplicationId: optString(cmd, "deduplication-id"), DelayInSeconds: optInt(cmd, "delay-in-seconds"),
		Traceparent: optString(cmd, "traceparent")}
	if cmd.Flags().Changed("custom-properties") {
		props, _ := cmd.Flags().GetStringToString("custom-properties")
		cp := sdk.MessageCustomProperties(props)
		md.CustomProperties = &cp
	}
	if md != (sdk.MessageMetadata{}) {
		e.Metadata = &md
	}
	return e, nil
}

// forEachContent calls fn with each message's content, in order: the arguments ("-": stdin's lines), then the
// files. Stdin is read as it comes, so that a long stream is sent batch by batch.
func forEachContent(stdin io.Reader, args, files []string, fn func(string) error) error {
	stdinRead := false
	for _, arg := range args {
		if arg != "-" {
			if err := fn(arg); err != nil {
				return err
			}
			continue
		}
		if stdinRead {
			return usagef("- (stdin) is given twice")
		}
		stdinRead = true
		if err := forEachLine(stdin, fn); err != nil {
			return err
		}
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return usagef("--file: %v", err)
		}
		if err := fn(string(data)); err != nil {
			return err
		}
	}
	return nil
}

// forEachLine calls fn with each non-empty line of r, without its line ending.
func forEachLine(r io.Reader, fn func(string) error) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
}

// putter sends messages in batches of size, or fewer when the next one would pass putBodyLimit.
type putter struct {
	a       *app
	c       *sdk.ClientWithResponses
	ctx     context.Context
	queueID string
	size    int

	batch   []sdk.PutMessagesDetailsEntry
	bytes   int
	results []json.RawMessage // the answers' entries, as they came
	calls   int
	raw     []byte // the last answer
}

func (p *putter) add(e sdk.PutMessagesDetailsEntry) error {
	encoded, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(p.batch) > 0 && p.bytes+len(encoded)+1 > putBodyLimit {
		if err := p.flush(); err != nil {
			return err
		}
	}
	p.batch = append(p.batch, e)
	p.bytes += len(encoded) + 1
	if len(p.batch) == p.size {
		return p.flush()
	}
	return nil
}

func (p *putter) flush() error {
	if len(p.batch) == 0 {
		return nil
	}
	r, err := check(p.c.PutMessagesWithResponse(p.ctx, p.queueID, &sdk.PutMessagesParams{}, sdk.PutMessagesDetails{Messages: p.batch}))
	if err != nil {
		return err
	}
	var answer struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(r.body, &answer); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	p.results = append(p.results, answer.Messages...)
	p.calls++
	p.raw = r.body
	p.batch, p.bytes = p.batch[:0], 0
	return nil
}

// receipts are a command's receipts: its arguments, "-" reading stdin's lines.
func receipts(stdin io.Reader, args []string) ([]string, error) {
	var out []string
	err := forEachContent(stdin, args, nil, func(r string) error {
		out = append(out, strings.TrimSpace(r))
		return nil
	})
	if err == nil && len(out) == 0 {
		err = usagef("no receipt: give receipts as arguments, or - to read them from stdin")
	}
	return out, err
}

func ackFlags(cmd *cobra.Command) {
	cmd.Flags().String("queue-id", "", "the queue")
	cmd.Flags().String("consumer-group-id", "", "the consumer group the messages were received from (default: the primary)")
	cmd.Flags().Bool("dlq", false, "the receipts are of the dead-letter queue")
	_ = cmd.MarkFlagRequired("queue-id")
}

func (a *app) messageDelete() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete --queue-id ID RECEIPT...|-",
		Short: "Acknowledge (delete) received messages by their receipts",
		Long: `Acknowledge messages by their receipts (arguments, or "-": one per line of stdin). One receipt is
deleted with DeleteMessage and prints nothing; more are sent in batches of 32 with DeleteMessages, whose
per-entry results are printed; the exit status is 1 when an entry failed.`,
		Example: `  ferryctl message get --queue-id $Q --query 'messages[].receipt' | ferryctl message delete --queue-id $Q -`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			rs, err := receipts(a.stdin, args)
			if err != nil {
				return err
			}
			q, group, dlq := flagString(cmd, "queue-id"), optString(cmd, "consumer-group-id"), optBool(cmd, "dlq")
			if len(rs) == 1 {
				_, err := check(c.DeleteMessageWithResponse(cmd.Context(), q, rs[0], &sdk.DeleteMessageParams{ConsumerGroupId: group, Dlq: dlq}))
				return err
			}
			return a.batches(rs, func(chunk []string) (*reply, error) {
				body := sdk.DeleteMessagesDetails{Entries: make([]sdk.DeleteMessagesDetailsEntry, len(chunk))}
				for i, r := range chunk {
					body.Entries[i].Receipt = r
				}
				return check(c.DeleteMessagesWithResponse(cmd.Context(), q, &sdk.DeleteMessagesParams{ConsumerGroupId: group, Dlq: dlq}, body))
			})
		},
	}
	ackFlags(cmd)
	return cmd
}

func (a *app) messageUpdate() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update --queue-id ID --visibility-in-seconds N RECEIPT...|-",
		Short: "Extend or release (0) the leases of received messages",
		Long: `Set how long received messages stay invisible from now on (0 releases them at once), by their
receipts (arguments, or "-": one per line of stdin). One receipt uses UpdateMessage; more are sent in
batches of 32 with UpdateMessages, whose per-entry results are printed; the exit status is 1 when an entry
failed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.api()
			if err != nil {
				return err
			}
			rs, err := receipts(a.stdin, args)
			if err != nil {
				return err
			}
			q, group, dlq := flagString(cmd, "queue-id"), optString(cmd, "consumer-group-id"), optBool(cmd, "dlq")
			visibility, _ := cmd.Flags().GetInt("visibility-in-seconds")
			if len(rs) == 1 {
				r, err := check(c.UpdateMessageWithResponse(cmd.Context(), q, rs[0], &sdk.UpdateMessageParams{ConsumerGroupId: group, Dlq: dlq},
					sdk.UpdateMessageDetails{VisibilityInSeconds: visibility}))
				if err != nil {
					return err
				}
				return a.emit(updatedMessageView, r.body)
			}
			return a.batches(rs, func(chunk []string) (*reply, error) {
				body := sdk.UpdateMessagesDetails{Entries: make([]sdk.UpdateMessagesDetailsEntry, len(chunk))}
				for i, r := range chunk {
					body.Entries[i] = sdk.UpdateMessagesDetailsEntry{Receipt: r, VisibilityInSeconds: visibility}
				}
				return check(c.UpdateMessagesWithResponse(cmd.Context(), q, &sdk.UpdateMessagesParams{ConsumerGroupId: group, Dlq: dlq}, body))
			})
		},
	}
	ackFlags(cmd)
	cmd.Flags().Int("visibility-in-seconds", 0, fmt.Sprintf("seconds from now the messages stay invisible (0..%d; 0 releases them)", openapi.MaxVisibilitySeconds))
	_ = cmd.MarkFlagRequired("visibility-in-seconds")
	return cmd
}

// batchResult is the shape of DeleteMessages' and UpdateMessages' answers, to merge several.
type batchResult struct {
	ClientFailures int               `json:"clientFailures"`
	Entries        []json.RawMessage `json:"entries"`
	ServerFailures int               `json:"serverFailures"`
}

// batches sends receipts in chunks of the API's most, prints the answers as one, and fails when an entry did.
func (a *app) batches(rs []string, send func([]string) (*reply, error)) error {
	var merged batchResult
	var raw []byte
	for start := 0; start < len(rs); start += openapi.MaxAckEntries {
		r, err := send(rs[start:min(start+openapi.MaxAckEntries, len(rs))])
		if err != nil {
			return err
		}
		var one batchResult
		if err := json.Unmarshal(r.body, &one); err != nil {
			return fmt.Errorf("reading the answer: %w", err)
		}
		merged.ClientFailures += one.ClientFailures
		merged.ServerFailures += one.ServerFailures
		merged.Entries = append(merged.Entries, one.Entries...)
		raw = r.body
	}
	if len(rs) > openapi.MaxAckEntries {
		var err error
		if raw, err = json.Marshal(merged); err != nil {
			return err
		}
	}
	if err := a.emit(batchResultView, raw); err != nil {
		return err
	}
	if failed := merged.ClientFailures + merged.ServerFailures; failed > 0 {
		return fmt.Errorf("%d of %d entries failed (%d client, %d server failures)", failed, len(rs), merged.ClientFailures, merged.ServerFailures)
	}
	return nil
}
