// Command producer is the smallest shared-memory producer program: the
// dependency test checks what such a binary links (no recorder, no dump
// format, no compressor).
package main

import (
	"log"

	"github.com/edr-lite/edr-lite/shm"
)

func main() {
	p, err := shm.NewProducer("/dev/shm/edr", shm.ProducerOptions{Name: "vehicle/speed", Type: "f32le"})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	p.Publish(0, []byte{0, 0, 0xa0, 0x41})
}
