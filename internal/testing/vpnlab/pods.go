//go:build linux

package vpnlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Pods is a pod network across the VPN as Calico's VXLAN builds one: each
// side's host is a node with a VXLAN device, vxlan.calico, addressed from
// its block, and one pod behind a veth pair, routed as Calico routes
// them (the pod's default route through 169.254.1.1, answered by proxy
// ARP on the node's end; the other node's block through its
// vxlan.calico address, with static ARP and FDB entries, as Felix
// programs them). The outer packets are the kernel's VXLAN with its
// defaults, DF clear, which is what Felix leaves them.
type Pods struct {
	// Blocks are each side's node's pod block: the node's vxlan.calico
	// has its first address, the pod its second.
	Blocks [2]netip.Prefix
	// MTU is each side's pod MTU, which Calico gives both the pod's
	// veth pair and vxlan.calico.
	MTU [2]int
}

// Felix's defaults for VXLAN (projectcalico/calico v3.32.0,
// felix/config/config_params.go: VXLANPort, VXLANVNI) and its device name.
const (
	vxlanPort = 4789
	vxlanVNI  = 4096
	vxlanDev  = "vxlan.calico"
)

// PodAddr returns the address of side i's pod.
func (p Pods) PodAddr(i int) netip.Addr { return p.Blocks[i].Masked().Addr().Next().Next() }

func (p Pods) vtep(i int) netip.Addr { return p.Blocks[i].Masked().Addr().Next() }

// StartPods builds p on the running lab.
func (l *Lab) StartPods(p Pods) {
	l.t.Helper()
	if len(l.sides) != 2 {
		l.t.Fatal("vpnlab: pods run on a lab of two sides")
	}
	macs := [2]string{}
	for i, s := range l.sides {
		s.pod = l.id + "-" + s.Name + "-pod"
		l.run("", "ip", "netns", "add", s.pod)
		l.run(s.pod, "ip", "link", "set", "lo", "up")
		l.run(s.host, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		l.run(s.host, "ip", "link", "add", vxlanDev, "type", "vxlan", "id", itoa(vxlanVNI), "dstport", itoa(vxlanPort),
			"local", s.Host.String(), "dev", "lan", "nolearning")
		l.run(s.host, "ip", "addr", "add", p.vtep(i).String()+"/32", "dev", vxlanDev)
		l.run(s.host, "ip", "link", "add", "cali0", "type", "veth", "peer", "name", "eth0", "netns", s.pod)
		l.run(s.host, "sysctl", "-qw", "net.ipv4.conf.cali0.proxy_arp=1")
		l.run(s.pod, "ip", "addr", "add", p.PodAddr(i).String()+"/32", "dev", "eth0")
		macs[i] = l.linkMAC(s.host, vxlanDev)
	}
	l.SetPodMTU(p.MTU)
	for i, s := range l.sides {
		for _, dev := range []string{vxlanDev, "cali0"} {
			l.run(s.host, "ip", "link", "set", dev, "up")
		}
		l.run(s.host, "ip", "route", "add", p.PodAddr(i).String()+"/32", "dev", "cali0")
		l.run(s.pod, "ip", "link", "set", "eth0", "up")
		l.run(s.pod, "ip", "route", "add", "169.254.1.1/32", "dev", "eth0", "scope", "link")
		l.run(s.pod, "ip", "route", "add", "default", "via", "169.254.1.1", "dev", "eth0")
		r := 1 - i
		l.run(s.host, "ip", "neigh", "add", p.vtep(r).String(), "lladdr", macs[r], "dev", vxlanDev, "nud", "permanent")
		l.run(s.host, "bridge", "fdb", "add", macs[r], "dev", vxlanDev, "dst", l.sides[r].Host.String())
		l.run(s.host, "ip", "route", "add", p.Blocks[r].Masked().String(), "via", p.vtep(r).String(), "dev", vxlanDev, "onlink")
	}
}

// SetPodMTU gives each side's pod network its MTU (vxlan.calico and both
// ends of the pod's veth pair) and forgets the learned path MTUs.
func (l *Lab) SetPodMTU(mtu [2]int) {
	l.t.Helper()
	for i, s := range l.sides {
		m := itoa(mtu[i])
		l.run(s.host, "ip", "link", "set", vxlanDev, "mtu", m)
		l.run(s.host, "ip", "link", "set", "cali0", "mtu", m)
		l.run(s.pod, "ip", "link", "set", "eth0", "mtu", m)
	}
	l.FlushPathMTUs()
}

func (l *Lab) linkMAC(ns, dev string) string {
	l.t.Helper()
	out := l.run(ns, "ip", "-j", "link", "show", dev)
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		l.t.Fatalf("vpnlab: ip -j link show %s: %v\n%s", dev, err, out)
	}
	return links[0].Address
}

// Transfer is what a bulk TCP transfer moved.
type Transfer struct {
	// Bytes the receiver read, of Size sent.
	Bytes, Size int64
	// Took is how long the receiver read, until the sender's end or the
	// bound.
	Took time.Duration
	// Done is whether every byte arrived within the bound.
	Done bool
}

func (x Transfer) String() string {
	return fmt.Sprintf("%d of %d bytes in %s", x.Bytes, x.Size, x.Took.Round(10*time.Millisecond))
}

// PodTransfer sends size bytes over one TCP connection from side from's
// pod to the other side's pod and returns what arrived within bound.
func (l *Lab) PodTransfer(p Pods, from int, size int64, bound time.Duration) Transfer {
	l.t.Helper()
	to := 1 - from
	return l.transfer(l.sides[from].pod, l.sides[to].pod, p.PodAddr(to), size, bound)
}

// HostTransfer sends size bytes over one TCP connection from side from's
// host to the other side's host and returns what arrived within bound.
func (l *Lab) HostTransfer(from int, size int64, bound time.Duration) Transfer {
	l.t.Helper()
	to := 1 - from
	return l.transfer(l.sides[from].host, l.sides[to].host, l.sides[to].Host, size, bound)
}

// transfer sends size bytes over one TCP connection from namespace src
// to a listener on dst in namespace dstNS.
func (l *Lab) transfer(src, dstNS string, dst netip.Addr, size int64, bound time.Duration) Transfer {
	l.t.Helper()
	var ln net.Listener
	if err := inNS(dstNS, func() (err error) {
		ln, err = net.Listen("tcp4", netip.AddrPortFrom(dst, 0).String())
		return err
	}); err != nil {
		l.t.Fatalf("vpnlab: listen in %s: %v", dstNS, err)
	}
	defer ln.Close()
	start := time.Now()
	deadline := start.Add(bound)
	var got atomic.Int64
	type result struct {
		took time.Duration
		err  error
	}
	recv := make(chan result, 1)
	go func() {
		_ = ln.(*net.TCPListener).SetDeadline(deadline)
		c, err := ln.Accept()
		if err != nil {
			recv <- result{time.Since(start), err}
			return
		}
		defer c.Close()
		_ = c.SetDeadline(deadline)
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			got.Add(int64(n))
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				recv <- result{time.Since(start), err}
				return
			}
		}
	}()
	var c net.Conn
	if err := inNS(src, func() (err error) {
		d := net.Dialer{Deadline: deadline}
		c, err = d.Dial("tcp4", ln.Addr().String())
		return err
	}); err != nil {
		l.t.Fatalf("vpnlab: %s to %s: %v", src, ln.Addr(), err)
	}
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		defer c.Close()
		_ = c.SetDeadline(deadline)
		buf := make([]byte, 64<<10)
		for left := size; left > 0; {
			n := int64(len(buf))
			if left < n {
				n = left
			}
			w, err := c.Write(buf[:n])
			left -= int64(w)
			if err != nil {
				return
			}
		}
		_ = c.(*net.TCPConn).CloseWrite()
		// Wait for the receiver's close, so that the connection is not
		// reset under data still in flight.
		_, _ = c.Read(make([]byte, 1))
	}()
	r := <-recv
	c.Close()
	<-sent
	x := Transfer{Bytes: got.Load(), Size: size, Took: r.took}
	x.Done = r.err == nil && x.Bytes == size
	return x
}

// PathMTU sends UDP datagrams with DF set, as IP packets of size bytes,
// from side from's host to the other side's host, and returns the path
// MTU the sender's kernel holds once an ICMP "fragmentation needed" told
// it a smaller one, or after timeout; and how many of the datagrams
// arrived.
func (l *Lab) PathMTU(from, size int, timeout time.Duration) (mtu, arrived int) {
	l.t.Helper()
	to := 1 - from
	dst := l.listenUDP(l.sides[to].host, netip.AddrPortFrom(l.sides[to].Host, 0))
	defer dst.Close()
	var n atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := dst.ReadFrom(buf); err != nil {
				return
			}
			n.Add(1)
		}
	}()
	var c *net.UDPConn
	if err := inNS(l.sides[from].host, func() (err error) {
		c, err = net.DialUDP("udp4", nil, dst.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		l.t.Fatalf("vpnlab: %v", err)
	}
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		l.t.Fatal(err)
	}
	pmtu := func() (v int) {
		var serr error
		if err := raw.Control(func(fd uintptr) { v, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU) }); err != nil || serr != nil {
			l.t.Fatalf("vpnlab: IP_MTU: %v %v", err, serr)
		}
		return v
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	}); err != nil || serr != nil {
		l.t.Fatalf("vpnlab: IP_MTU_DISCOVER: %v %v", err, serr)
	}
	payload := make([]byte, size-28) // IPv4 and UDP headers
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		// EMSGSIZE once the kernel knows the smaller path MTU.
		_, _ = c.Write(payload)
		time.Sleep(200 * time.Millisecond)
		if m := pmtu(); m < size {
			return m, int(n.Load())
		}
	}
	return pmtu(), int(n.Load())
}
