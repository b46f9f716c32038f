package pipeline

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// stateText writes v out whole, following pointers (each once) and
// unexported fields, maps in key order, NaN as NaN, an instant as its
// clock readings: two values with the same text hold the same state.
func stateText(v any) string { return valueText(reflect.ValueOf(v)) }

func valueText(v reflect.Value) string {
	var b strings.Builder
	d := dumper{b: &b, seen: map[string]bool{}}
	d.dump(v, 0)
	return b.String()
}

type dumper struct {
	b    *strings.Builder
	seen map[string]bool
}

var timeType = reflect.TypeOf(time.Time{})

func (d dumper) line(depth int, s string) {
	d.b.WriteString(strings.Repeat(" ", depth) + s + "\n")
}

func (d dumper) dump(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Invalid:
		d.line(depth, "<nil>")
	case reflect.Pointer:
		if v.IsNil() {
			d.line(depth, "nil")
			return
		}
		key := fmt.Sprintf("%s@%x", v.Type(), v.Pointer())
		if d.seen[key] {
			d.line(depth, "(seen "+v.Type().String()+")")
			return
		}
		d.seen[key] = true
		d.dump(v.Elem(), depth)
	case reflect.Interface:
		if v.IsNil() {
			d.line(depth, "nil")
			return
		}
		d.line(depth, v.Elem().Type().String())
		d.dump(v.Elem(), depth+1)
	case reflect.Struct:
		d.fields(v, depth)
	case reflect.Map:
		keys := v.MapKeys()
		text := make([]string, len(keys))
		for i, k := range keys {
			text[i] = valueText(k)
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return text[idx[a]] < text[idx[b]] })
		d.line(depth, fmt.Sprintf("map len %d", len(keys)))
		for _, i := range idx {
			d.line(depth, "key "+strings.TrimSpace(text[i]))
			d.dump(v.MapIndex(keys[i]), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			d.line(depth, "nil slice")
			return
		}
		d.line(depth, fmt.Sprintf("len %d", v.Len()))
		for i := range v.Len() {
			d.dump(v.Index(i), depth+1)
		}
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		d.line(depth, v.Type().String()) // behaviour, not state
	case reflect.Bool:
		d.line(depth, fmt.Sprint(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.line(depth, fmt.Sprint(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		d.line(depth, fmt.Sprint(v.Uint()))
	case reflect.Float32, reflect.Float64:
		d.line(depth, fmt.Sprint(v.Float()))
	case reflect.Complex64, reflect.Complex128:
		d.line(depth, fmt.Sprint(v.Complex()))
	case reflect.String:
		d.line(depth, fmt.Sprintf("%q", v.String()))
	}
}

// fields dumps a struct's fields; a time is its readings, and the servers'
// HTTP transport (a connection pool, not what a poll folds) its name only.
func (d dumper) fields(v reflect.Value, depth int) {
	if v.Type() == timeType { // wall and monotonic readings; its zone is no state of ours
		d.line(depth, fmt.Sprintf("time %d %d", v.Field(0).Uint(), v.Field(1).Int()))
		return
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		d.line(depth, f.Name+":")
		if f.Type.String() == "*servers.serverHTTP" {
			d.line(depth+1, "(transport)")
			continue
		}
		d.dump(v.Field(i), depth+1)
	}
}
