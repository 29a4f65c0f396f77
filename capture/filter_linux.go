//go:build !ecu

package capture

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// __sk_buff field offsets (linux/bpf.h).
const (
	skbVLANPresent = 20
	skbVLANTCI     = 24
)

// Registers of the filter program. LD_ABS / LD_IND need the context in R6
// and clobber R0-R5, so state lives in R7-R9.
const (
	rCtx   = asm.R6
	rL3    = asm.R7 // offset of the IP header
	rType  = asm.R8 // EtherType after VLAN tags
	rL4    = asm.R9 // offset of the transport header
	lDrop  = "drop"
	lTyped = "typed"
	lIPv4  = "ipv4"
	lIPv6  = "ipv6"
	lL4    = "l4"
	lTag   = "tagged"
	lInner = "inner"
)

// progBuilder collects instructions; a label set with at() names the next
// instruction emitted.
type progBuilder struct {
	ins     asm.Instructions
	pending string
	n       int
}

func (b *progBuilder) emit(is ...asm.Instruction) {
	for _, in := range is {
		if b.pending != "" {
			in = in.WithSymbol(b.pending)
			b.pending = ""
		}
		b.ins = append(b.ins, in)
	}
}

func (b *progBuilder) at(label string) {
	if b.pending != "" { // two labels on one spot: give the first a no-op
		b.emit(asm.Mov.Reg(asm.R0, asm.R0))
	}
	b.pending = label
}

func (b *progBuilder) fresh(prefix string) string {
	b.n++
	return prefix + strconv.Itoa(b.n)
}

// inRanges jumps to drop unless R0 lies in one of rs.
func (b *progBuilder) inRanges(rs []PortRange) {
	ok := b.fresh("port_ok")
	for _, r := range rs {
		next := b.fresh("range")
		b.emit(
			asm.JLT.Imm32(asm.R0, int32(r.Lo), next),
			asm.JLE.Imm32(asm.R0, int32(r.Hi), ok),
		)
		b.at(next)
	}
	b.emit(asm.Ja.Label(lDrop))
	b.at(ok)
}

// protoChecks tests the protocol byte just loaded into R0.
func (b *progBuilder) protoChecks(f *Filter, ports bool) {
	if f.IPProto != 0 {
		b.emit(asm.JNE.Imm32(asm.R0, int32(f.IPProto), lDrop))
	} else if ports {
		ok := b.fresh("proto_ok")
		b.emit(
			asm.JEq.Imm32(asm.R0, IPProtoUDP, ok),
			asm.JEq.Imm32(asm.R0, IPProtoTCP, ok),
			asm.JEq.Imm32(asm.R0, ipProtoSCTP, ok),
			asm.Ja.Label(lDrop),
		)
		b.at(ok)
	}
}

// filterProgram translates f into a socket filter program over a frame
// that starts at its Ethernet header. It returns the whole frame (-1) on a
// match and 0 otherwise; a load beyond the frame ends the program with 0.
func filterProgram(f *Filter) (asm.Instructions, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	v4, v6, needIP := f.ipFamilies()
	ports := len(f.SrcPorts)+len(f.DstPorts) > 0
	b := &progBuilder{}
	b.emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.Mov.Imm(rL3, ethernetHeader),
		asm.LoadAbs(12, asm.Half),
		asm.JEq.Imm32(asm.R0, EtherTypeVLAN, lTag),
		asm.JEq.Imm32(asm.R0, EtherTypeQinQ, lTag),
	)
	if f.VLAN != 0 { // untagged in the frame: the NIC may have stripped the tag
		b.emit(
			asm.LoadMem(asm.R1, rCtx, skbVLANPresent, asm.Word),
			asm.JEq.Imm32(asm.R1, 0, lDrop),
			asm.LoadMem(asm.R1, rCtx, skbVLANTCI, asm.Word),
			asm.And.Imm32(asm.R1, 0x0fff),
			asm.JNE.Imm32(asm.R1, int32(f.VLAN), lDrop),
		)
	}
	b.emit(asm.Ja.Label(lTyped))
	b.at(lTag)
	if f.VLAN != 0 {
		b.emit(
			asm.LoadAbs(14, asm.Half),
			asm.And.Imm32(asm.R0, 0x0fff),
			asm.JNE.Imm32(asm.R0, int32(f.VLAN), lDrop),
		)
	}
	b.emit(
		asm.LoadAbs(16, asm.Half),
		asm.Mov.Imm(rL3, ethernetHeader+vlanTag),
		asm.JEq.Imm32(asm.R0, EtherTypeVLAN, lInner), // a second (inner) tag
		asm.JNE.Imm32(asm.R0, EtherTypeQinQ, lTyped),
	)
	b.at(lInner)
	b.emit(
		asm.LoadAbs(20, asm.Half),
		asm.Mov.Imm(rL3, ethernetHeader+2*vlanTag),
	)
	b.at(lTyped)
	b.emit(asm.Mov.Reg(rType, asm.R0))
	if f.EtherType != 0 {
		b.emit(asm.JNE.Imm32(rType, int32(f.EtherType), lDrop))
	}
	if needIP {
		if v4 {
			b.emit(asm.JEq.Imm32(rType, EtherTypeIPv4, lIPv4))
		}
		if v6 {
			b.emit(asm.JEq.Imm32(rType, EtherTypeIPv6, lIPv6))
		}
		b.emit(asm.Ja.Label(lDrop))
		if v4 {
			b.at(lIPv4)
			b.emit(
				asm.LoadInd(asm.R0, rL3, 0, asm.Byte),
				asm.And.Imm32(asm.R0, 0x0f),
				asm.JLT.Imm32(asm.R0, 5, lDrop),
				asm.LSh.Imm32(asm.R0, 2),
				asm.Mov.Reg(rL4, rL3),
				asm.Add.Reg(rL4, asm.R0),
				asm.LoadInd(asm.R0, rL3, 9, asm.Byte),
			)
			b.protoChecks(f, ports)
			if g := f.MulticastGroup; g.IsValid() {
				a := g.As4()
				b.emit(
					asm.LoadInd(asm.R0, rL3, 16, asm.Word),
					asm.JNE.Imm32(asm.R0, int32(binary.BigEndian.Uint32(a[:])), lDrop),
				)
			}
			if ports { // only an unfragmented packet or a first fragment has ports
				b.emit(
					asm.LoadInd(asm.R0, rL3, 6, asm.Half),
					asm.And.Imm32(asm.R0, 0x1fff),
					asm.JNE.Imm32(asm.R0, 0, lDrop),
				)
			}
			b.emit(asm.Ja.Label(lL4))
		}
		if v6 {
			b.at(lIPv6)
			b.emit(
				asm.Mov.Reg(rL4, rL3),
				asm.Add.Imm(rL4, ipv6Header),
				asm.LoadInd(asm.R0, rL3, 6, asm.Byte),
			)
			b.protoChecks(f, ports)
			if g := f.MulticastGroup; g.IsValid() {
				a := g.As16()
				for w := range 4 {
					b.emit(
						asm.LoadInd(asm.R0, rL3, int32(24+4*w), asm.Word),
						asm.JNE.Imm32(asm.R0, int32(binary.BigEndian.Uint32(a[4*w:])), lDrop),
					)
				}
			}
		}
		b.at(lL4)
		if len(f.SrcPorts) > 0 {
			b.emit(asm.LoadInd(asm.R0, rL4, 0, asm.Half))
			b.inRanges(f.SrcPorts)
		}
		if len(f.DstPorts) > 0 {
			b.emit(asm.LoadInd(asm.R0, rL4, 2, asm.Half))
			b.inRanges(f.DstPorts)
		}
	}
	b.emit(asm.Mov.Imm(asm.R0, -1), asm.Return())
	if slices.ContainsFunc(b.ins, func(in asm.Instruction) bool { return in.Reference() == lDrop }) {
		b.at(lDrop) // the verifier rejects unreachable code
		b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	}
	return b.ins, nil
}

// loadFilter compiles f and loads it into the kernel.
func loadFilter(f *Filter) (*ebpf.Program, error) {
	ins, err := filterProgram(f)
	if err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "edr_capture",
		Type:         ebpf.SocketFilter,
		License:      "MIT",
		Instructions: ins,
	})
	if err != nil {
		return nil, fmt.Errorf("load socket filter (%s): %w", f, err)
	}
	return prog, nil
}

// attachFilter loads f and attaches it to the socket with SO_ATTACH_BPF.
// The socket keeps the program alive; our handle is closed.
func attachFilter(fd int, f *Filter) error {
	prog, err := loadFilter(f)
	if err != nil {
		return err
	}
	defer prog.Close()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ATTACH_BPF, prog.FD()); err != nil {
		return fmt.Errorf("SO_ATTACH_BPF: %w", err)
	}
	return nil
}
