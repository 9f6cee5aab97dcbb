package artifacts

import (
	"strings"
	"testing"
)

func TestParseSamples(t *testing.T) {
	good := "algorithm,operation,iteration,value,unit,variant\n" +
		"ML-KEM-512,keygen,0,10,ns,\nML-KEM-512,keygen,1,12.5,ns,\n" +
		"ECDSA-P256,sign,0,3,ns,-rawin -digest sha256\n" +
		"ML-KEM-512,keygen,0,0.001,J,\n"
	s, err := ParseSamples([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Values[CellKey{"ML-KEM-512", "keygen", ""}]; len(v) != 2 || v[1] != 12.5 {
		t.Errorf("keygen samples %v, want [10 12.5]", v)
	}
	if v := s.Values[CellKey{"ECDSA-P256", "sign", "-rawin -digest sha256"}]; len(v) != 1 {
		t.Errorf("variant cell samples %v, want one", v)
	}
	if v := s.Energy[CellKey{"ML-KEM-512", "keygen", ""}]; len(v) != 1 || v[0] != 0.001 {
		t.Errorf("energy samples %v, want [0.001]", v)
	}
	old, err := ParseSamples([]byte("algorithm,operation,iteration,value,unit\nA,op,0,1,instructions\n"))
	if err != nil || len(old.Values[CellKey{"A", "op", ""}]) != 1 {
		t.Errorf("five-column samples.csv: %v %v", old, err)
	}
	bad := []struct{ name, data, want string }{
		{"empty", "", "empty"},
		{"header", "a,b,c\n", "header"},
		{"value", "algorithm,operation,iteration,value,unit\nA,op,0,x,ns\n", "line 2: value"},
		{"nan", "algorithm,operation,iteration,value,unit\nA,op,0,NaN,ns\n", "finite"},
		{"iteration gap", "algorithm,operation,iteration,value,unit\nA,op,0,1,ns\nA,op,2,1,ns\n", "line 3: iteration 2"},
		{"columns", "algorithm,operation,iteration,value,unit\nA,op,0,1\n", "samples.csv"},
		{"no algorithm", "algorithm,operation,iteration,value,unit\n,op,0,1,ns\n", "empty algorithm"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSamples([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseSamples(f *testing.F) {
	f.Add([]byte("algorithm,operation,iteration,value,unit,variant\nA,op,0,1,ns,\nA,op,1,2,ns,\n"))
	f.Add([]byte("algorithm,operation,iteration,value,unit\nA,op,0,1e9,J\n"))
	f.Add([]byte("algorithm,operation\n\"unterminated"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSamples(data)
		if err != nil {
			return
		}
		for k, v := range s.Values {
			if k.Algorithm == "" || k.Operation == "" || len(v) == 0 {
				t.Fatalf("accepted an empty key or cell: %+v %v", k, v)
			}
		}
	})
}
