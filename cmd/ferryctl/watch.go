package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferry-mq/ferry/openapi"
	"github.com/ferry-mq/ferry/openapi/sdk"
)

// stopTimeout bounds what a stopping watch still sends: the acknowledgement of a line already written and the
// Shutdown frame.
const stopTimeout = 10 * time.Second

func (a *app) messageWatch() *cobra.Command {
	var noAck bool
	var maxMessages int
	cmd := &cobra.Command{
		Use:   "watch --queue-id ID [--consumer-group-id G] [--no-ack]",
		Short: "Stream pushed messages to stdout as JSON lines, acknowledging each line written",
		Long: `Open a watch (a WebSocket push consumer) on a queue's consumer group and write each message to stdout
as one JSON line (the GetMessages shape; --query prints one field instead). Each message is acknowledged
once its line is written, unless --no-ack: then the messages are only looked at, and released when the watch
stops. SIGINT or SIGTERM (or --max-messages) stops the watch cleanly: the Shutdown frame releases whatever it
holds unwritten, and the exit status is 0. Status changes (STANDBY, RUNNING) are reported on stderr.`,
		Example: `  ferryctl message watch --queue-id $Q --consumer-group-id billing
  ferryctl message watch --queue-id $Q --query content --max-messages 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.output != "json" {
				return usagef("message watch writes JSON lines: -o %s does not apply (--query does)", a.output)
			}
			if _, err := a.api(); err != nil {
				return err
			}
			ctx := cmd.Context()
			w, err := sdk.Watch(ctx, a.conf.endpoint, flagString(cmd, "queue-id"), sdk.WatchOptions{
				Token: a.conf.token, ConsumerGroupID: flagString(cmd, "consumer-group-id"), ConsumerID: flagString(cmd, "consumer-id"),
				Window: intFlag(cmd, "window"), ChannelFilter: flagString(cmd, "channel-filter"),
			})
			if err != nil {
				var we *sdk.WatchError
				if errors.As(err, &we) && we.StatusCode != 0 {
					return &apiError{Status: we.StatusCode, Code: we.Code, Message: we.Message}
				}
				return err
			}
			fmt.Fprintf(a.stderr, "watching as consumer %s of group %s (window %d)\n", w.ConsumerID, w.ConsumerGroupID, w.Window)
			return a.pump(ctx, w, noAck, maxMessages)
		},
	}
	f := cmd.Flags()
	f.String("queue-id", "", "the queue")
	f.String("consumer-group-id", "", "the consumer group (OCID or display name; default: the primary)")
	f.String("consumer-id", "", "the consumer's name (default: the server names it)")
	f.Int("window", 0, fmt.Sprintf("the most unacknowledged messages pushed (1..%d; default %d)", openapi.MaxWatchWindow, openapi.DefaultWatchWindow))
	f.String("channel-filter", "", "a channel id, or a prefix ending in *")
	f.BoolVar(&noAck, "no-ack", false, "do not acknowledge: print the messages and release them when the watch stops")
	f.IntVar(&maxMessages, "max-messages", 0, "stop after this many messages (0: until interrupted)")
	_ = cmd.MarkFlagRequired("queue-id")
	return cmd
}

func intFlag(cmd *cobra.Command, name string) int {
	v, _ := cmd.Flags().GetInt(name)
	return v
}

// pump writes the watch's messages until ctx ends (a signal), max messages were written, stdout closes, or
// the watch ends; then it shuts the watch down.
func (a *app) pump(ctx context.Context, w *sdk.Watcher, noAck bool, maxMessages int) (err error) {
	out := bufio.NewWriter(a.stdout)
	defer func() {
		// Shutdown releases what the consumer holds unwritten (and, with --no-ack, everything) at once rather
		// than when the server notices the connection is gone; it is sent even after a signal.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		if serr := w.Shutdown(sctx); serr != nil && err == nil && ctx.Err() == nil {
			err = fmt.Errorf("shutting the watch down: %w", serr)
		}
		_ = w.Close()
	}()
	written := 0
	for maxMessages == 0 || written < maxMessages {
		select {
		case <-ctx.Done():
			return nil // interrupted: a clean stop
		case status := <-w.Statuses():
			fmt.Fprintf(a.stderr, "consumer %s is %s\n", w.ConsumerID, status)
		case m, ok := <-w.Messages():
			if !ok {
				return fmt.Errorf("the watch ended: %w", w.Err())
			}
			if err := a.writeLine(out, m); err != nil {
				if errors.Is(err, syscall.EPIPE) {
					return nil // the reader is gone (… | head): stop, leaving this message unacknowledged
				}
				return fmt.Errorf("writing stdout: %w", err)
			}
			written++
			if noAck {
				continue
			}
			// The line is out: acknowledge it even if a signal arrives meanwhile.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			failed, err := w.Commit(actx, m.Receipt)
			cancel()
			if err != nil {
				return fmt.Errorf("acknowledging message %d: %w", m.Id, err)
			}
			if len(failed) > 0 {
				fmt.Fprintf(a.stderr, "acknowledging message %d failed: %s: %s\n", m.Id, failed[0].Code, failed[0].Message)
			}
		}
	}
	return nil
}

// writeLine writes one message as a JSON line (or its --query field) and flushes it.
func (a *app) writeLine(out *bufio.Writer, m sdk.GetMessage) error {
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false) // as the API writes it
	if err := enc.Encode(m); err != nil {
		return err
	}
	if a.query != "" {
		saved := a.stdout
		a.stdout = out
		err := a.printQuery(line.Bytes())
		a.stdout = saved
		if err != nil {
			return err
		}
	} else if _, err := out.Write(line.Bytes()); err != nil {
		return err
	}
	return out.Flush()
}
