package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The peer benchmark's settings: the broker, the messages each phase publishes and then drains, and ferry's HTTP
// workers.
var (
	rabbitURL      = envString("FERRY_BENCH_RABBITMQ_URL", "amqp://guest:guest@127.0.0.1:5672/")
	peerMessages   = envInt("FERRY_BENCH_PEER_MESSAGES", 100_000)
	peerWorkers    = envInt("FERRY_BENCH_PEER_WORKERS", 8)
	peerRounds     = max(1, envInt("FERRY_BENCH_PEER_ROUNDS", 3))
	rabbitQueue    = "ferry-bench-peer"
	rabbitWindow   = 256 // publisher confirms in flight
	rabbitPrefetch = 100 // unacknowledged deliveries to the consumer
)

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// lifecycle is one phase of the peer benchmark: N messages published, then drained, with the CPU each process
// used in each half.
type lifecycle struct {
	msgs             int
	publish, consume time.Duration
	pubCPU, conCPU   cpuUse
	requests         string // ferry's: the requests of the consume half per 1,000 messages
}

func (l lifecycle) publishRate() float64 { return float64(l.msgs) / l.publish.Seconds() }
func (l lifecycle) consumeRate() float64 { return float64(l.msgs) / l.consume.Seconds() }
func (l lifecycle) wholeRate() float64   { return float64(l.msgs) / (l.publish + l.consume).Seconds() }

func (l lifecycle) String() string {
	s := fmt.Sprintf("publish %.0f msgs/s (CPU µs/msg %s), consume+ack %.0f msgs/s (%s), lifecycle %.0f msgs/s",
		l.publishRate(), l.pubCPU.perMsg(l.msgs), l.consumeRate(), l.conCPU.perMsg(l.msgs), l.wholeRate())
	if l.requests != "" {
		s += "; consume requests per 1,000 messages: " + l.requests
	}
	return s
}

// cpuUse is the CPU seconds ferry's processes, PostgreSQL, RabbitMQ's beam.smp and this load generator used in
// an interval.
type cpuUse struct{ ferry, postgres, beam, client float64 }

// cpuNow reads every process's CPU so far (the ferry processes of nodes, the PostgreSQL of the first).
func cpuNow(nodes ...*node) cpuUse {
	u := cpuUse{postgres: nodes[0].clusterCPU(), client: processCPU(os.Getpid(), false), beam: beamCPU()}
	for _, n := range nodes {
		u.ferry += n.ferryCPU()
	}
	return u
}

func (u cpuUse) since(before cpuUse) cpuUse {
	return cpuUse{u.ferry - before.ferry, u.postgres - before.postgres, u.beam - before.beam, u.client - before.client}
}

func (u cpuUse) perMsg(msgs int) string {
	per := func(s float64) float64 { return max(0, s*1e6/float64(msgs)) } // 0, not -0, when a reaped child's rounding shows
	return fmt.Sprintf("ferry %.0f, postgres %.0f, rabbitmq %.0f, client %.0f", per(u.ferry), per(u.postgres), per(u.beam), per(u.client))
}

// beamCPU is the CPU seconds of the machine's RabbitMQ (the beam.smp process; 0 when none is readable).
func beamCPU() float64 {
	var sum float64
	for _, pid := range processes() {
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "beam.smp" {
			sum += processCPU(pid, false)
		}
	}
	return sum
}

// BenchmarkRabbitMQ runs the same durable workload on ferry and on a RabbitMQ quorum queue, alternated (ferry,
// RabbitMQ, ferry with DeleteAndGetMessages, for peerRounds rounds), each phase after the database settled:
// peerMessages 1 KiB messages published and then drained. ferry: peerWorkers HTTP workers putting batches of 20,
// then peerWorkers getting 32 and deleting them (or acknowledging them with the next DeleteAndGetMessages).
// RabbitMQ: one publisher with confirms, 256 in flight, and one consumer with manual acks, prefetch 100
// (RabbitMQ's own PerfTest shape).
// Without a broker at FERRY_BENCH_RABBITMQ_URL it says so and skips: no figures are made up.
func BenchmarkRabbitMQ(b *testing.B) {
	conn, err := amqp.DialConfig(rabbitURL, amqp.Config{Dial: amqp.DefaultDial(3 * time.Second)})
	if err != nil {
		fmt.Printf("ratio_over_rabbitmq skipped: no broker answers at %s (%v)\n", redactURL(rabbitURL), err)
		b.Skipf("RabbitMQ phase skipped: no broker answers at %s: %v", redactURL(rabbitURL), err)
	}
	defer conn.Close()
	b.Logf("RabbitMQ %v at %s; %d messages of 1 KiB per phase, ferry with %d HTTP workers",
		conn.Properties["version"], redactURL(rabbitURL), peerMessages, peerWorkers)
	if beamCPU() == 0 {
		b.Logf("the beam.smp process is not readable here: RabbitMQ's CPU shows as 0")
	}
	n := startNode(b)

	var ferrySum, combinedSum, rabbitSum lifecycle
	var roundRatios []string // consume+ack, ferry's standard calls over RabbitMQ, round by round
	add := func(sum *lifecycle, l lifecycle) {
		sum.msgs += l.msgs
		sum.publish += l.publish
		sum.consume += l.consume
	}
	for round := 1; round <= peerRounds; round++ {
		n.settle(b)
		f := n.ferryLifecycle(b, n.createQueue(b, fmt.Sprintf("peer-%d", round)), peerMessages, false)
		b.Logf("round %d: ferry    %s", round, f)
		add(&ferrySum, f)
		n.settle(b) // so that PostgreSQL's cleanup of ferry's phase does not run beside RabbitMQ's
		r := rabbitLifecycle(b, conn, n, peerMessages)
		b.Logf("round %d: rabbitmq %s", round, r)
		add(&rabbitSum, r)
		roundRatios = append(roundRatios, fmt.Sprintf("%.2f", f.consumeRate()/r.consumeRate()))
		n.settle(b)
		c := n.ferryLifecycle(b, n.createQueue(b, fmt.Sprintf("peer-combined-%d", round)), peerMessages, true)
		b.Logf("round %d: ferry, DeleteAndGetMessages %s", round, c)
		add(&combinedSum, c)
	}
	pub := ferrySum.publishRate() / rabbitSum.publishRate()
	con := ferrySum.consumeRate() / rabbitSum.consumeRate()
	whole := ferrySum.wholeRate() / rabbitSum.wholeRate()
	b.Logf("ferry over RabbitMQ: publish %.2f, consume+ack %.2f (rounds %s), lifecycle %.2f (ferry %.0f/%.0f/%.0f msgs/s, RabbitMQ %.0f/%.0f/%.0f)",
		pub, con, strings.Join(roundRatios, ", "), whole, ferrySum.publishRate(), ferrySum.consumeRate(), ferrySum.wholeRate(),
		rabbitSum.publishRate(), rabbitSum.consumeRate(), rabbitSum.wholeRate())
	combCon := combinedSum.consumeRate() / rabbitSum.consumeRate()
	combWhole := combinedSum.wholeRate() / rabbitSum.wholeRate()
	b.Logf("ferry with DeleteAndGetMessages over RabbitMQ: consume+ack %.2f, lifecycle %.2f (ferry %.0f/%.0f/%.0f msgs/s)",
		combCon, combWhole, combinedSum.publishRate(), combinedSum.consumeRate(), combinedSum.wholeRate())
	fmt.Printf("ratio_over_rabbitmq publish=%.2f consume=%.2f lifecycle=%.2f combined_consume=%.2f combined_lifecycle=%.2f ferry_msgs_per_s=%.0f/%.0f rabbitmq_msgs_per_s=%.0f/%.0f rounds=%d consume_by_round=%s\n",
		pub, con, whole, combCon, combWhole, ferrySum.publishRate(), ferrySum.consumeRate(), rabbitSum.publishRate(), rabbitSum.consumeRate(),
		peerRounds, strings.Join(roundRatios, "/"))
}

// redactURL hides an AMQP URL's password.
func redactURL(raw string) string {
	if u, err := amqp.ParseURI(raw); err == nil {
		u.Password = "xxx"
		return u.String()
	}
	return "(unparsable URL)"
}

// ferryLifecycle publishes total messages to queue with peerWorkers workers (PutMessages, batches of 20), then
// drains them with peerWorkers workers: GetMessages limit 32, then deleteMessages (the standard calls), or, when
// combined, DeleteAndGetMessages with each batch's receipts (a GetMessages when a worker holds none).
func (n *node) ferryLifecycle(b testing.TB, queue string, total int, combined bool) lifecycle {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	batch := make([]putEntry, 20)
	for i := range batch {
		batch[i] = putEntry{Content: payload}
	}
	body, _ := json.Marshal(map[string]any{"messages": batch})
	l := lifecycle{msgs: total / 20 * 20}

	cpu0 := cpuNow(n)
	start := time.Now()
	var puts atomic.Int64
	var wg sync.WaitGroup
	for range peerWorkers {
		wg.Go(func() {
			for ctx.Err() == nil && puts.Add(1) <= int64(l.msgs/20) {
				for n.mustCall(ctx, b, http.MethodPost, "/20210201/queues/"+queue+"/messages", body, nil) != nil && ctx.Err() == nil {
				}
			}
		})
	}
	wg.Wait()
	l.publish = time.Since(start)
	cpu1 := cpuNow(n)
	l.pubCPU = cpu1.since(cpu0)

	requests0 := n.requestCounts()
	start = time.Now()
	// The consume half ends at the last deleteMessages answer; the long polls then still waiting (for messages
	// that will not come) are called off, not counted.
	polls, allDeleted := context.WithCancel(ctx)
	defer allDeleted()
	var consumed atomic.Int64
	var end time.Time
	var ended sync.Once
	acked := func(k int) {
		if consumed.Add(int64(k)) >= int64(l.msgs) {
			ended.Do(func() { end = time.Now(); allDeleted() }) // before wg.Wait reads end
		}
	}
	for range peerWorkers {
		wg.Go(func() {
			var pending []string // combined: the receipts of the last batch, acknowledged by the next call
			for polls.Err() == nil {
				var raw []byte
				if len(pending) > 0 {
					// Not long-polling: the call that acknowledges the last batch would wait for messages that never come.
					if err := n.mustCall(ctx, b, http.MethodPost, "/20210201/queues/"+queue+"/messages/actions/deleteAndGetMessages?limit=32&timeoutInSeconds=0",
						deleteBody(pending), &raw); err != nil {
						continue
					}
					k := len(pending) // fresh receipts: every entry succeeds (counted below against what was published)
					pending = scanLeasedReceipts(raw)
					acked(k)
					continue
				}
				if err := n.mustCall(polls, b, http.MethodGet, "/20210201/queues/"+queue+"/messages?limit=32&timeoutInSeconds=1", nil, &raw); err != nil {
					continue
				}
				receipts := scanReceipts(raw)
				switch {
				case len(receipts) == 0:
				case combined:
					pending = receipts
				default:
					if err := n.mustCall(ctx, b, http.MethodPost, "/20210201/queues/"+queue+"/messages/actions/deleteMessages",
						deleteBody(receipts), nil); err == nil {
						acked(len(receipts))
					}
				}
			}
		})
	}
	wg.Wait()
	l.consume = end.Sub(start)
	l.conCPU = cpuNow(n).since(cpu1)
	l.requests = strings.TrimSpace(perThousand(requests0, n.requestCounts(), float64(l.msgs)))
	if ctx.Err() != nil {
		b.Fatalf("ferry's lifecycle did not finish in time: %d of %d consumed", consumed.Load(), l.msgs)
	}
	if got := consumed.Load(); got != int64(l.msgs) {
		b.Fatalf("ferry: %d messages deleted, %d published", got, l.msgs)
	}
	return l
}

// mustCall is n.call that logs the failures it sees (they are retried or counted by the caller, never hidden).
func (n *node) mustCall(ctx context.Context, b testing.TB, method, path string, in, out any) error {
	_, err := n.call(ctx, method, path, in, out)
	if err != nil && ctx.Err() == nil {
		b.Logf("%s %s: %v", method, path, err)
	}
	return err
}

// rabbitLifecycle publishes total 1 KiB persistent messages to a fresh quorum queue with confirms (rabbitWindow in
// flight), then consumes them with manual acks (prefetch rabbitPrefetch); the consume half ends at the last ack
// sent.
// n is ferry's node, idle during the phase, whose processes' CPU is read beside RabbitMQ's.
func rabbitLifecycle(b testing.TB, conn *amqp.Connection, n *node, total int) lifecycle {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDelete(rabbitQueue, false, false, false); err != nil {
		b.Fatal(err)
	}
	if _, err := ch.QueueDeclare(rabbitQueue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	l := lifecycle{msgs: total / 20 * 20}
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", Body: []byte(payload)}

	cpu0 := cpuNow(n)
	start := time.Now()
	window := make(chan *amqp.DeferredConfirmation, rabbitWindow)
	confirmed := func(dc *amqp.DeferredConfirmation) {
		if ok, err := dc.WaitContext(ctx); err != nil || !ok {
			b.Fatalf("RabbitMQ did not confirm a publish (acked %v): %v", ok, err)
		}
	}
	for range l.msgs {
		if len(window) == cap(window) {
			confirmed(<-window)
		}
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", rabbitQueue, false, false, msg)
		if err != nil {
			b.Fatal(err)
		}
		window <- dc
	}
	for len(window) > 0 {
		confirmed(<-window)
	}
	l.publish = time.Since(start)
	cpu1 := cpuNow(n)
	l.pubCPU = cpu1.since(cpu0)

	start = time.Now()
	consumer, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := consumer.Qos(rabbitPrefetch, 0, false); err != nil {
		b.Fatal(err)
	}
	deliveries, err := consumer.ConsumeWithContext(ctx, rabbitQueue, "ferry-bench", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	got := 0
	for d := range deliveries {
		if err := d.Ack(false); err != nil {
			b.Fatal(err)
		}
		if got++; got == l.msgs {
			break
		}
	}
	l.consume = time.Since(start)
	l.conCPU = cpuNow(n).since(cpu1)
	// AMQP 0-9-1 does not answer acks, and a quorum queue settles them through its Raft log after the channel
	// sent them: a channel closed right after its last ack had the broker return up to 22 of 10,000 acknowledged
	// messages to the queue. So the consume half ends at the last ack sent (as RabbitMQ's PerfTest counts), and
	// the channel stays open a second before it closes and the queue is checked to be empty.
	time.Sleep(time.Second)
	if err := consumer.Close(); err != nil {
		b.Fatal(err)
	}
	if got != l.msgs {
		b.Fatalf("RabbitMQ: %d messages consumed, %d published (%v)", got, l.msgs, ctx.Err())
	}
	// The count a quorum queue reports follows its Raft log: it reaches 0 shortly after the last settled ack.
	for wait := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left, err := ch.QueueDeclarePassive(rabbitQueue, true, false, false, false, amqp.Table{"x-queue-type": "quorum"})
		if err != nil {
			b.Fatal(err)
		}
		if left.Messages == 0 {
			break
		}
		if time.Now().After(wait) {
			b.Fatalf("RabbitMQ: %d messages left in the queue 10 s after the drain", left.Messages)
		}
	}
	if _, err := ch.QueueDelete(rabbitQueue, false, false, false); err != nil && !errors.Is(err, amqp.ErrClosed) {
		b.Fatal(err)
	}
	return l
}
