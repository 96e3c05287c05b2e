package main

import (
	"net"
	"sync"
)

// proxy forwards TCP connections from a local port to the API server, and
// can cut them off without closing them: while blackholed, no byte moves
// either way (what is read is held until the proxy heals), and new
// connections are accepted but carry nothing, as when a network drops a
// replica's packets. One proxy stands in front of each replica.
type proxy struct {
	ln     net.Listener
	target string
	// mu guards blackholed and conns; cond wakes copiers when the proxy
	// heals or closes.
	mu         sync.Mutex
	cond       *sync.Cond
	blackholed bool
	closed     bool
	conns      map[net.Conn]struct{}
	wg         sync.WaitGroup
}

// newProxy listens on a free local port and forwards to target.
func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Go(p.accept)
	return p, nil
}

// addr is where replicas reach the API server through the proxy.
func (p *proxy) addr() string { return p.ln.Addr().String() }

// setBlackholed cuts the proxy's traffic off (true) or lets it flow again.
func (p *proxy) setBlackholed(on bool) {
	p.mu.Lock()
	p.blackholed = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

// close stops the proxy and closes every connection it holds.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cond.Broadcast()
	p.ln.Close()
	p.wg.Wait()
}

func (p *proxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Go(func() { p.pipe(in, out) })
		p.wg.Go(func() { p.pipe(out, in) })
	}
}

// track records a connection pair, or closes it if the proxy is closed.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		if p.closed {
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
	}
	return !p.closed
}

// pipe copies from src to dst, holding each chunk while the proxy is
// blackholed; when either side ends, both are closed.
func (p *proxy) pipe(src, dst net.Conn) {
	defer func() {
		src.Close()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitOpen() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed connection: both sides end
		}
	}
}

// waitOpen blocks while the proxy is blackholed; false once it is closed.
func (p *proxy) waitOpen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.blackholed && !p.closed {
		p.cond.Wait()
	}
	return !p.closed
}
