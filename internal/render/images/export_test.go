package images

// JoinPackages is imageJoinPackages for the tests of package images_test.
var JoinPackages = imageJoinPackages
