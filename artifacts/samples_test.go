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
	rounds, err := ParseSamples([]byte("algorithm,operation,iteration,value,unit,variant,round,offset\n" +
		"A,op,0,10,ns,,0,1000\nB,op,0,12,ns,,0,2000\nA,op,1,11,ns,,1,3000\nB,op,1,13,ns,,1,4000\nC,op,0,5,instructions,,,\nA,op,0,0.1,J,,,\nA,op,0,9,ns,v,0,1500\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, o := rounds.Rounds[CellKey{"A", "op", ""}], rounds.Offsets[CellKey{"B", "op", ""}]; len(r) != 2 || r[1] != 1 || len(o) != 2 || o[1] != 4000 {
		t.Errorf("rounds %v offsets %v", r, o)
	}
	if v := rounds.Values[CellKey{"A", "op", "v"}]; len(v) != 1 || v[0] != 9 {
		t.Errorf("the variant column of an eight-column file: %v", v)
	}
	if rounds.InRounds(CellKey{"C", "op", ""}) || !rounds.InRounds(CellKey{"A", "op", ""}) {
		t.Error("a cell without rounds is in rounds, or one with them is not")
	}
	const h8 = "algorithm,operation,iteration,value,unit,variant,round,offset\n"
	bad := []struct{ name, data, want string }{
		{"round decreases", h8 + "A,op,0,1,ns,,1,0\nA,op,1,1,ns,,0,5\n", "rounds never decrease"},
		{"offset decreases", h8 + "A,op,0,1,ns,,0,9\nA,op,1,1,ns,,0,5\n", "offsets never decrease"},
		{"round on some rows only", h8 + "A,op,0,1,ns,,0,1\nA,op,1,1,ns,,,\n", "earlier rows gave them"},
		{"round after rows without", h8 + "A,op,0,1,ns,,,\nA,op,1,1,ns,,1,5\n", "earlier rows gave none"},
		{"round not a number", h8 + "A,op,0,1,ns,,x,1\n", "round \"x\""},
		{"negative offset", h8 + "A,op,0,1,ns,,0,-1\n", "offset \"-1\""},
		{"energy in a round", h8 + "A,op,0,1,J,,0,1\n", "energy row"},
		{"seven columns", "algorithm,operation,iteration,value,unit,variant,round\nA,op,0,1,ns,,0\n", "header"},
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
	f.Add([]byte("algorithm,operation,iteration,value,unit,variant,round,offset\nA,op,0,1,ns,,0,10\nA,op,1,2,ns,,1,20\nB,op,0,3,instructions,,,\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSamples(data)
		if err != nil {
			return
		}
		for k, v := range s.Values {
			if k.Algorithm == "" || k.Operation == "" || len(v) == 0 {
				t.Fatalf("accepted an empty key or cell: %+v %v", k, v)
			}
			if r := s.Rounds[k]; len(r) > 0 && (len(r) != len(v) || len(s.Offsets[k]) != len(v)) {
				t.Fatalf("%+v: %d samples, %d rounds, %d offsets", k, len(v), len(r), len(s.Offsets[k]))
			}
		}
	})
}
