#
# nodes: 3, pause: 0.00, max speed: 5.00, max x: 600.00, max y: 100.00
#
$node_(0) set X_ 0.0
$node_(0) set Y_ 0.0
$node_(0) set Z_ 0.0
$node_(1) set X_ 200.0
$node_(1) set Y_ 0.0
$node_(1) set Z_ 0.0
$node_(2) set X_ 400.0
$node_(2) set Y_ 0.0
$node_(2) set Z_ 0.0
$ns_ at 5.0 "$node_(1) setdest 200.0 100.0 5.0"
$ns_ at 15.0 "$node_(2) setdest 600.0 0.0 5.0"
