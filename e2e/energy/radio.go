package energy

import "github.com/mpsurf/mpsurf/native-host/radio"

// The model and its state machine live in native-host/radio, since the host infers RRC states with them and
// a product package must not import the testbed. These names keep this package's API as it was.

type (
	Model         = radio.Model
	PromotionSpec = radio.PromotionSpec
	ConnectedSpec = radio.ConnectedSpec
	Phase         = radio.Phase
	DRX           = radio.DRX
	Wake          = radio.Wake
	Kind          = radio.Kind
	State         = radio.State
	Category      = radio.Category
	Packet        = radio.Packet
)

// Technologies, kinds, states and categories, as in native-host/radio.
const (
	LTE    = radio.LTE
	ThreeG = radio.ThreeG
	WiFi   = radio.WiFi

	KindIdle      = radio.KindIdle
	KindPromotion = radio.KindPromotion
	KindConnected = radio.KindConnected
	KindTail      = radio.KindTail

	CatPromotion = radio.CatPromotion
	CatActive    = radio.CatActive
	CatTail      = radio.CatTail
	CatIdle      = radio.CatIdle
)

var (
	Idle       = radio.Idle
	Connected  = radio.Connected
	Promoting  = radio.Promoting
	Categories = radio.Categories
)

// Load reads and validates a model file (radio.Load).
func Load(path string) (*Model, error) { return radio.Load(path) }

// Parse decodes and validates a model (radio.Parse).
func Parse(b []byte) (*Model, error) { return radio.Parse(b) }
