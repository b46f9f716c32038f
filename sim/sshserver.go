package sim

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer is an in-process SSH server on loopback for the demo: exec runs
// through /bin/sh -c on this machine, "sftp" is pkg/sftp's server, and
// direct-tcpip reaches loopback addresses only. Its host key is fresh for
// each run and pinned in KnownHosts; the client key is KeyPath. The user's
// own ~/.ssh is never read or written.
type SSHServer struct {
	KeyPath    string
	KnownHosts string
	cfg        *ssh.ServerConfig
	hostPub    ssh.PublicKey
	ln         net.Listener
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
	procs      map[*exec.Cmd]struct{}
	wg         sync.WaitGroup
}

// NewSSHServer makes keys under dir.
func NewSSHServer(dir string) (*SSHServer, error) {
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		return nil, err
	}
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(clientPriv, "synthwatch demo")
	if err != nil {
		return nil, err
	}
	s := &SSHServer{KeyPath: filepath.Join(dir, "id_demo"), KnownHosts: filepath.Join(dir, "known_hosts"),
		conns: map[net.Conn]struct{}{}, procs: map[*exec.Cmd]struct{}{}, hostPub: hostSigner.PublicKey()}
	if err := os.WriteFile(s.KeyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	authorized, err := ssh.NewPublicKey(clientPub)
	if err != nil {
		return nil, err
	}
	s.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(k.Marshal(), authorized.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	s.cfg.AddHostKey(hostSigner)
	return s, nil
}

// Start listens on a free loopback port and pins the host key.
func (s *SSHServer) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.ln = ln
	line := knownhosts.Line([]string{knownhosts.Normalize(ln.Addr().String())}, s.hostPub)
	if err := os.WriteFile(s.KnownHosts, []byte(line+"\n"), 0o600); err != nil {
		return err
	}
	s.wg.Add(1)
	go s.accept()
	return nil
}

// Addr is the listening host:port.
func (s *SSHServer) Addr() string { return s.ln.Addr().String() }

// Close stops listening, drops every connection and kills every command
// it started (process groups included).
func (s *SSHServer) Close() {
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	for p := range s.procs {
		if p.Process != nil {
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *SSHServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *SSHServer) serveConn(c net.Conn) {
	sc, chans, reqs, err := ssh.NewServerConn(c, s.cfg)
	if err != nil {
		c.Close()
		return
	}
	defer sc.Close()
	go func() {
		for r := range reqs { // keepalive@openssh.com and friends
			if r.WantReply {
				r.Reply(r.Type == "keepalive@openssh.com", nil)
			}
		}
	}()
	var wg sync.WaitGroup
	for nc := range chans {
		wg.Add(1)
		go func(nc ssh.NewChannel) {
			defer wg.Done()
			switch nc.ChannelType() {
			case "session":
				s.session(nc)
			case "direct-tcpip":
				s.forward(nc)
			default:
				nc.Reject(ssh.UnknownChannelType, "not supported")
			}
		}(nc)
	}
	wg.Wait()
}

func (s *SSHServer) forward(nc ssh.NewChannel) {
	var p struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
		nc.Reject(ssh.ConnectionFailed, "bad request")
		return
	}
	ip := net.ParseIP(p.Host)
	if p.Host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		nc.Reject(ssh.Prohibited, "the demo host forwards to loopback only")
		return
	}
	up, err := net.Dial("tcp", net.JoinHostPort(p.Host, fmt.Sprint(p.Port)))
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		up.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	go func() { io.Copy(ch, up); ch.CloseWrite() }()
	io.Copy(up, ch)
	up.Close()
	ch.Close()
}

func (s *SSHServer) session(nc ssh.NewChannel) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	defer ch.Close()
	var cmd *exec.Cmd
	finished := make(chan struct{})
	for r := range reqs {
		switch r.Type {
		case "exec":
			var p struct{ Command string }
			if ssh.Unmarshal(r.Payload, &p) != nil || cmd != nil {
				r.Reply(false, nil)
				continue
			}
			r.Reply(true, nil)
			cmd = exec.Command("/bin/sh", "-c", p.Command)
			cmd.Stdout, cmd.Stderr = ch, ch.Stderr()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			// stdin from the channel, as sshd gives it (the dashboard's host
			// agent reads its requests there); Wait does not wait for it
			if in, err := cmd.StdinPipe(); err == nil {
				go func() { _, _ = io.Copy(in, ch); in.Close() }()
			}
			go func() { s.run(cmd, ch); close(finished) }()
		case "subsystem":
			var p struct{ Name string }
			if ssh.Unmarshal(r.Payload, &p) != nil || p.Name != "sftp" {
				r.Reply(false, nil)
				continue
			}
			r.Reply(true, nil)
			srv, err := sftp.NewServer(ch)
			if err != nil {
				return
			}
			go func() {
				for r := range reqs {
					if r.WantReply {
						r.Reply(false, nil)
					}
				}
			}()
			_ = srv.Serve()
			srv.Close()
			return
		case "signal":
			if cmd != nil && cmd.Process != nil {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		default:
			if r.WantReply {
				r.Reply(r.Type == "env", nil)
			}
		}
	}
	if cmd == nil {
		return
	}
	select {
	case <-finished: // it ended by itself; what it started detached (setsid) lives on, as with sshd
	default: // the client went away mid-command: leave nothing running
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
}

func (s *SSHServer) run(cmd *exec.Cmd, ch ssh.Channel) {
	status := uint32(0)
	s.mu.Lock()
	s.procs[cmd] = struct{}{}
	s.mu.Unlock()
	err := cmd.Run()
	s.mu.Lock()
	delete(s.procs, cmd)
	s.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		status = uint32(ee.ExitCode())
	case err != nil:
		status = 127
	}
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, status)
	ch.SendRequest("exit-status", false, b)
	ch.Close()
}
