package bench

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pqrepro/artifacts"
	"pqrepro/internal/shareddata"
	"pqrepro/runner/trial"
)

type acvpFile struct {
	TestGroups []struct {
		ParameterSet string            `json:"parameterSet"`
		Function     string            `json:"function"`
		Tests        []json.RawMessage `json:"tests"`
	} `json:"testGroups"`
}

// firstVectors returns the first test of every parameter set (and function, if any) in file.
func firstVectors(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(shareddata.Dir(t, "test-vectors", "acvp"), dir, "internalProjection.json"))
	if err != nil {
		t.Fatalf("NIST ACVP vectors: %v", err)
	}
	var f acvpFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, g := range f.TestGroups {
		key := g.ParameterSet
		if g.Function != "" {
			key += "/" + g.Function
		}
		if _, ok := out[key]; ok || len(g.Tests) == 0 {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal(g.Tests[0], &v); err != nil {
			t.Fatal(err)
		}
		out[key] = v
	}
	return out
}

func unhex(t *testing.T, v any) []byte {
	t.Helper()
	b, err := hex.DecodeString(v.(string))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCatalogueHasImplementations(t *testing.T) {
	if err := checkCatalogue(Algorithms()); err != nil {
		t.Fatal(err)
	}
}

// TestSizesMatchFIPS generates keys and outputs with every host implementation and checks
// their lengths against the catalogue's FIPS 203/204/205 sizes.
func TestSizesMatchFIPS(t *testing.T) {
	kems, sigs := Algorithms()
	for _, a := range artifacts.Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			rng := trial.NewDRBG("sizes", a.Name)
			eq := func(what string, got, want int) {
				if want != 0 && got != want {
					t.Errorf("%s is %d bytes, catalogue says %d", what, got, want)
				}
			}
			if a.KEM {
				k := kems[a.Name]
				kp, err := k.Keygen(rng)
				if err != nil {
					t.Fatal(err)
				}
				eq("public key", len(kp.PubBytes), a.PublicKey)
				eq("private key", len(kp.PrivKey), a.PrivateKey)
				if k.Encaps != nil {
					ct, ss, err := k.Encaps(kp.Pub, rng)
					if err != nil {
						t.Fatal(err)
					}
					eq("ciphertext", len(ct), a.Ciphertext)
					eq("shared secret", len(ss), a.SharedSecret)
				}
				return
			}
			if strings.HasPrefix(a.Name, "SLH-DSA") && strings.HasSuffix(a.Name, "s") && testing.Short() {
				t.Skip("slow signing set in -short mode")
			}
			s := sigs[a.Name]
			kp, err := s.Keygen(rng)
			if err != nil {
				t.Fatal(err)
			}
			eq("public key", len(kp.PubBytes), a.PublicKey)
			eq("private key", len(kp.PrivKey), a.PrivateKey)
			sig, err := s.Sign(kp.Priv, []byte("size check"), rng)
			if err != nil {
				t.Fatal(err)
			}
			eq("signature", len(sig), a.Signature)
			if !s.Verify(kp.Pub, []byte("size check"), sig) {
				t.Error("signature does not verify")
			}
		})
	}
}

// TestACVPKeyGen feeds NIST's ACVP key-generation inputs through each name's keygen (as its
// random stream) and compares the keys with NIST's answers, so a catalogue name can never be
// wired to the wrong parameter set.
func TestACVPKeyGen(t *testing.T) {
	kems, sigs := Algorithms()
	for set, v := range firstVectors(t, "ML-KEM-keyGen-FIPS203") {
		t.Run(set, func(t *testing.T) {
			seed := append(unhex(t, v["d"]), unhex(t, v["z"])...)
			kp, err := kems[set].Keygen(bytes.NewReader(seed))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kp.PubBytes, unhex(t, v["ek"])) || !bytes.Equal(kp.PrivKey, unhex(t, v["dk"])) {
				t.Fatalf("%s keygen differs from NIST ACVP tcId %v", set, v["tcId"])
			}
		})
	}
	for set, v := range firstVectors(t, "ML-DSA-keyGen-FIPS204") {
		t.Run(set, func(t *testing.T) {
			kp, err := sigs[set].Keygen(bytes.NewReader(unhex(t, v["seed"])))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kp.PubBytes, unhex(t, v["pk"])) || !bytes.Equal(kp.PrivKey, unhex(t, v["sk"])) {
				t.Fatalf("%s keygen differs from NIST ACVP tcId %v", set, v["tcId"])
			}
		})
	}
	slh := firstVectors(t, "SLH-DSA-keyGen-FIPS205")
	if len(slh) != 12 {
		t.Fatalf("SLH-DSA vectors for %d sets, want 12", len(slh))
	}
	for set, v := range slh {
		t.Run(set, func(t *testing.T) {
			seed := append(append(unhex(t, v["skSeed"]), unhex(t, v["skPrf"])...), unhex(t, v["pkSeed"])...)
			kp, err := sigs[set].Keygen(bytes.NewReader(seed))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kp.PubBytes, unhex(t, v["pk"])) || !bytes.Equal(kp.PrivKey, unhex(t, v["sk"])) {
				t.Fatalf("%s keygen differs from NIST ACVP tcId %v", set, v["tcId"])
			}
		})
	}
}

// TestACVPEncapDecap checks encapsulation with NIST's m and decapsulation of NIST's
// ciphertexts (including modified ones, which must give NIST's implicit-rejection secret).
func TestACVPEncapDecap(t *testing.T) {
	kems, _ := Algorithms()
	for key, v := range firstVectors(t, "ML-KEM-encapDecap-FIPS203") {
		set, fn, _ := strings.Cut(key, "/")
		k := kems[set]
		switch fn {
		case "encapsulation":
			t.Run(key, func(t *testing.T) {
				pk, err := k.ParsePub(unhex(t, v["ek"]))
				if err != nil {
					t.Fatal(err)
				}
				ct, ss, err := k.Encaps(pk, bytes.NewReader(unhex(t, v["m"])))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ct, unhex(t, v["c"])) || !bytes.Equal(ss, unhex(t, v["k"])) {
					t.Fatalf("%s encaps differs from NIST ACVP tcId %v", set, v["tcId"])
				}
			})
		case "decapsulation":
			t.Run(key, func(t *testing.T) {
				sk, err := k.ParsePriv(unhex(t, v["dk"]))
				if err != nil {
					t.Fatal(err)
				}
				ss, err := k.Decaps(sk, unhex(t, v["c"]))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(ss, unhex(t, v["k"])) {
					t.Fatalf("%s decaps differs from NIST ACVP tcId %v (%v)", set, v["tcId"], v["reason"])
				}
			})
		}
	}
}

// TestKeyEncodingsRoundTrip checks every key survives the encoding used by the
// process-per-operation method.
func TestKeyEncodingsRoundTrip(t *testing.T) {
	kems, sigs := Algorithms()
	for name, k := range kems {
		kp, err := k.Keygen(trial.NewDRBG("enc", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.ParsePub(kp.PubBytes); err != nil {
			t.Errorf("%s public key: %v", name, err)
		}
		if _, err := k.ParsePriv(kp.PrivKey); err != nil {
			t.Errorf("%s private key: %v", name, err)
		}
	}
	for name, s := range sigs {
		if strings.HasPrefix(name, "SLH-DSA") && !strings.HasSuffix(name, "128f") {
			continue
		}
		kp, err := s.Keygen(trial.NewDRBG("enc", name))
		if err != nil {
			t.Fatal(err)
		}
		pub, err1 := s.ParsePub(kp.PubBytes)
		priv, err2 := s.ParsePriv(kp.PrivKey)
		if err1 != nil || err2 != nil || !s.Pairs(pub, priv) {
			t.Errorf("%s keys do not round-trip: %v %v", name, err1, err2)
		}
	}
}
