package origin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Certificate is the server's self-signed certificate.
type Certificate struct {
	TLS tls.Certificate
	PEM []byte
	// SPKI is base64(sha256(SubjectPublicKeyInfo)), the form Chromium's
	// --ignore-certificate-errors-spki-list takes.
	SPKI string
}

// NewCertificate makes a self-signed ECDSA P-256 certificate for names (DNS names or IP
// literals), valid from an hour ago for 30 days.
func NewCertificate(names []string) (*Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "mpsurf testbed origin"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	if len(tmpl.DNSNames)+len(tmpl.IPAddresses) == 0 {
		return nil, fmt.Errorf("certificate: no names")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	return &Certificate{
		TLS:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		PEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		SPKI: base64.StdEncoding.EncodeToString(sum[:]),
	}, nil
}
