package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Cluster is a Redis Cluster of masters (no replicas) a test started, each
// a redis-server of its own (see Start), stopped by its PID when the test
// ends.
type Cluster struct {
	// Nodes are the masters: Nodes[i] serves the i-th of len(Nodes)
	// equal ranges of the slots, in order.
	Nodes []*Server
	// Replicas are those AddReplica started.
	Replicas []*Server

	args []string // StartCluster's, for each server
	meet func(from *Server, to int) error
}

// StartCluster starts masters redis-servers with cluster-enabled yes on
// free loopback ports, gives each its range of the slots (CLUSTER
// ADDSLOTSRANGE), joins them (CLUSTER MEET), and waits until every node
// knows every other and every slot. Each node's cluster bus is on a free
// port of its own too (cluster-port). args go to each server, after
// StartCluster's own (cluster-enabled, a cluster-node-timeout of 5 s):
// "--cluster-require-full-coverage", "no" keeps the others answering
// when one fails. Skipped as Start is.
func StartCluster(t testing.TB, masters int, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{args: args}
	var buses []string
	for range masters {
		n, bus := c.start(t)
		c.Nodes = append(c.Nodes, n)
		buses = append(buses, bus)
	}
	c.meet = func(from *Server, to int) error {
		host, port, _ := net.SplitHostPort(c.Nodes[to].Addr)
		_, err := from.Do("CLUSTER", "MEET", host, port, buses[to])
		return err
	}
	for i, n := range c.Nodes {
		first, last := c.SlotRange(i)
		if _, err := n.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last)); err != nil {
			t.Fatalf("node %s: CLUSTER ADDSLOTSRANGE: %v", n.Addr, err)
		}
	}
	meet := func(from int) {
		for i, n := range c.Nodes {
			if i == from {
				continue
			}
			if err := c.meet(c.Nodes[from], i); err != nil {
				t.Fatalf("CLUSTER MEET %s: %v", n.Addr, err)
			}
		}
	}
	meet(0)
	// Counted, not timed: gossip takes a few of Redis's cron ticks, and a
	// master turns ok 2 s after its start (CLUSTER_WRITABLE_DELAY). A node
	// that gossip has not yet introduced to every other is told of them
	// again every 40 rounds.
	for i := 0; ; i++ {
		formed, why, lonely := c.formed()
		if formed {
			return c
		}
		if i == 400 {
			var nodes strings.Builder
			for _, n := range c.Nodes {
				v, err := n.Do("CLUSTER", "NODES")
				fmt.Fprintf(&nodes, "%s's CLUSTER NODES (%v):\n%s\nits log:\n%s\n", n.Addr, err, v, n.Output())
			}
			t.Fatalf("the cluster of %d did not form: %s\n%s", masters, why, &nodes)
		}
		if i%40 == 39 {
			for _, n := range lonely {
				meet(n)
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// start starts one server of the cluster, with its cluster bus on a free
// port, which it returns.
func (c *Cluster) start(t testing.TB) (*Server, string) {
	var bus string
	s := startWith(t, func() []string {
		bus = strconv.Itoa(freePort(t)) // anew at each attempt, as the server's own port
		own := []string{"--cluster-enabled", "yes", "--cluster-node-timeout", "5000", "--cluster-port", bus}
		return append(own, c.args...)
	})
	return s, bus
}

// AddReplica starts a redis-server that joins the cluster as a replica of
// Nodes[of] (CLUSTER MEET, CLUSTER REPLICATE), and waits, counting, until
// its link to the master is up. A master with a replica fails over to it
// when it fails (after cluster-node-timeout).
func (c *Cluster) AddReplica(t testing.TB, of int) *Server {
	t.Helper()
	r, _ := c.start(t)
	c.Replicas = append(c.Replicas, r)
	id, err := c.Nodes[of].Do("CLUSTER", "MYID")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.meet(r, of); err != nil {
		t.Fatalf("CLUSTER MEET: %v", err)
	}
	replicating := false
	for i := 0; ; i++ {
		if !replicating {
			// Refused until the replica knows the master.
			_, err := r.Do("CLUSTER", "REPLICATE", id)
			replicating = err == nil
		}
		if replicating {
			info, err := r.Do("INFO", "replication")
			if err == nil && strings.Contains(info, "master_link_status:up\r\n") {
				return r
			}
		}
		if i == 400 {
			t.Fatalf("the replica %s of %s is not in sync:\n%s", r.Addr, c.Nodes[of].Addr, r.Output())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// SlotRange is the first and last slot of the i-th node.
func (c *Cluster) SlotRange(i int) (first, last int) {
	return i * Slots / len(c.Nodes), (i+1)*Slots/len(c.Nodes) - 1
}

// NodeOf returns the index in Nodes of the master of slot.
func (c *Cluster) NodeOf(slot int) int { return slot * len(c.Nodes) / Slots }

// Addrs are the nodes' addresses, in order.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// formed reports whether every node knows every node and slot and calls
// the cluster ok, or why not, and which nodes do not know every other.
func (c *Cluster) formed() (ok bool, why string, lonely []int) {
	for i, n := range c.Nodes {
		info, err := n.Do("CLUSTER", "INFO")
		if err != nil {
			return false, fmt.Sprintf("%s: %v", n.Addr, err), nil
		}
		if !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))+"\r\n") {
			lonely = append(lonely, i)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:" + strconv.Itoa(Slots), "cluster_known_nodes:" + strconv.Itoa(len(c.Nodes))} {
			if why == "" && !strings.Contains(info, want+"\r\n") {
				why = fmt.Sprintf("%s has no %s:\n%s", n.Addr, want, info)
			}
		}
	}
	return why == "", why, lonely
}

// Do sends one command to the server, in RESP, and returns its answer as
// text: a status, a number or a bulk string (nil as ""). An error answer
// is an error. It gives up after 5 seconds.
func (s *Server) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("an empty answer")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return "", err
		}
		return string(body[:n]), nil
	}
	return "", fmt.Errorf("an answer Do does not read: %q", line)
}
