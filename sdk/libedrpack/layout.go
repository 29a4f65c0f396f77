//go:build cgo

package main

/*
#include <stdlib.h>
#include "edr_pack.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/edr-lite/edr-lite/ingest"
	"github.com/edr-lite/edr-lite/schema"
)

// layoutField is one member of a record as edr_layout_json describes it.
type layoutField struct {
	Name   string        `json:"name"`
	Offset int           `json:"offset"`
	Type   string        `json:"type,omitempty"`
	Format string        `json:"format,omitempty"`
	Size   int           `json:"size,omitempty"` // a struct's (one element's)
	Shape  []int         `json:"shape"`
	Unit   string        `json:"unit,omitempty"`
	Fields []layoutField `json:"fields,omitempty"`
}

type layoutRecord struct {
	Name   string        `json:"name"`
	Size   int           `json:"size"`
	Fields []layoutField `json:"fields"`
}

// scalarFormat is numpy's type string of a scalar layout node.
func scalarFormat(n *schema.LayoutNode) string {
	kind := map[schema.Kind]string{schema.KindBool: "b", schema.KindInt: "i", schema.KindUint: "u", schema.KindFloat: "f"}[n.Scalar]
	order := "<"
	switch {
	case n.Size == 1:
		order = "|"
	case n.BigEndian:
		order = ">"
	}
	return fmt.Sprintf("%s%s%d", order, kind, n.Size)
}

// describe lays out members from offset 0 and returns their size; a member
// that is not of fixed size is an error naming it.
func describe(ms []schema.LayoutMember, prefix string) ([]layoutField, int, error) {
	var out []layoutField
	off := 0
	for i := range ms {
		m := &ms[i]
		n := &m.Node
		f := layoutField{Name: m.Name, Offset: off, Type: n.Type, Shape: []int{}, Unit: m.Unit}
		count := 1
		if n.Kind == schema.LayoutArray {
			f.Shape, count, n = []int{n.Len}, n.Len, n.Elem
		}
		size := 0
		switch n.Kind {
		case schema.LayoutPad:
			off += n.Size
			continue
		case schema.LayoutScalar:
			f.Format, size = scalarFormat(n), n.Size
		case schema.LayoutChar:
			f.Format, size = fmt.Sprintf("|S%d", n.Size), n.Size
		case schema.LayoutStruct:
			var err error
			f.Type = ""
			if f.Fields, size, err = describe(n.Members, prefix+m.Name+"."); err != nil {
				return nil, 0, err
			}
			f.Size = size
		default: // strings and bytes: a length prefix
			return nil, 0, fmt.Errorf("field %s%s is %s: length-prefixed, so its messages differ in size and have no fixed record", prefix, m.Name, n.Type)
		}
		out = append(out, f)
		off += size * count
	}
	return out, off, nil
}

// layoutJSON describes the record of a packed layout type.
func layoutJSON(t ingest.Type) ([]byte, error) {
	if t.MessageEncoding != ingest.EncodingPacked || t.Schema.Encoding != ingest.SchemaLayout {
		return nil, fmt.Errorf("type %s is not a packed layout (%s with an %s schema)", t.OrRaw(), ingest.EncodingPacked, ingest.SchemaLayout)
	}
	l, err := schema.ParseLayout(t.Schema.Data)
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", t.Schema.Name, err)
	}
	fields, size, err := describe(l.Members(), "")
	if err != nil {
		return nil, fmt.Errorf("layout %s: %w", t.Schema.Name, err)
	}
	if size != l.MinSize() {
		return nil, fmt.Errorf("layout %s: %d bytes laid out, the layout says %d", t.Schema.Name, size, l.MinSize())
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<f4", not "\u003cf4"
	if err := enc.Encode(layoutRecord{Name: t.Schema.Name, Size: size, Fields: fields}); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

//export edrgo_layout_json
func edrgo_layout_json(t *C.edr_type, out **C.char, errp **C.char) C.int {
	fail := func(err error) C.int {
		if errp != nil {
			*errp = C.CString("edr_layout_json: " + err.Error())
		}
		return C.EDR_EINVAL
	}
	if t == nil || out == nil {
		return fail(errors.New("NULL argument"))
	}
	typ, err := goType(t)
	if err != nil {
		return fail(err)
	}
	js, err := layoutJSON(typ)
	if err != nil {
		return fail(err)
	}
	p := allocOwned(len(js) + 1)
	b := unsafe.Slice((*byte)(p), len(js)+1)
	b[copy(b, js)] = 0
	*out = (*C.char)(p)
	return C.EDR_OK
}
